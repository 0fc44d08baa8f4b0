"""Checks every evaluation config shares: no NaN or infinity in a number field.

NaN compares false with everything, so a range check such as `if x <= 0: raise` lets it through,
and infinity passes every lower bound (`--run.batch_max_wait_s=inf` would wait forever). Each
config calls `reject_non_finite` first thing in `__post_init__`, before its own range checks.
The robot layer has its own copy (`robot/config_checks.py`): evaluation never imports robot.
"""

from __future__ import annotations

import math
from dataclasses import fields

from evaluation.errors import ConfigError


def reject_non_finite(config: object, prefix: str) -> None:
    """Raise if one of the dataclass's own number fields (or an item of a tuple of them) is NaN or infinite.

    `prefix` is the section name users type (`judge`, `run`, `frames`); nested configs are not
    entered, each checks itself. An unset `float | None` is fine.

    Raises:
        ConfigError: naming the field and its value.
    """
    for f in fields(config):  # type: ignore[arg-type]
        value = getattr(config, f.name)
        items = enumerate(value) if isinstance(value, tuple | list) else ()
        for name, item in ((f.name, value), *((f"{f.name}[{i}]", v) for i, v in items)):
            if isinstance(item, float) and not math.isfinite(item):
                where = f"{prefix}.{name}" if prefix else name  # a command's top-level option has no section
                raise ConfigError(f"{where}={item}: must be a finite number (not NaN or infinity)")
