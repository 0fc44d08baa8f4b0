"""Checks every config dataclass shares: no NaN or infinity in a number field.

NaN compares false with everything, so a range check such as `if x < 0: raise` lets it through,
and infinity passes every lower bound: `bus.read_deadline_ms: .nan` would never expire and
`bus.status_poll_period_s: .nan` would turn the thermal watchdog off. Each config calls
`reject_non_finite` first thing in `__post_init__`, before its own range checks.
"""

import math
from dataclasses import fields

from robot.errors import ConfigError


def non_finite_field(config: object) -> tuple[str, object] | None:
    """The first of the dataclass's own fields holding NaN or +/-inf, as (name, value); None if none.

    Looks at float values (an unset `float | None` is fine) and at the items of tuples and lists
    of numbers, named `field[i]`. Nested configs are not entered: each checks itself.
    """
    for f in fields(config):  # type: ignore[arg-type]
        value = getattr(config, f.name)
        if _is_non_finite(value):
            return f.name, value
        if isinstance(value, tuple | list):
            for i, item in enumerate(value):
                if _is_non_finite(item):
                    return f"{f.name}[{i}]", item
    return None


def reject_non_finite(config: object, prefix: str) -> None:
    """Raise if one of the config's own number fields is NaN or infinite.

    `prefix` is the section name users type (`bus`, `safety`, `session`); "" for a command's
    top-level options, named bare (`fps`).

    Raises:
        ConfigError: naming the field and its value.
    """
    bad = non_finite_field(config)
    if bad is not None:
        name, value = bad
        where = f"{prefix}.{name}" if prefix else name
        raise ConfigError(f"{where}={value}: must be a finite number (not NaN or infinity)")


def _is_non_finite(value: object) -> bool:
    return isinstance(value, float) and not math.isfinite(value)
