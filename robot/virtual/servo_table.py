"""A rig's own servo tables: one fitted table per follower arm (`virtual.servo_table`, written by so101-fit).

    {"about": ..., "arms": {"left_follower": {"params": {...}, "supply_v": 11.6, "fitted_on": {...},
                                              "fit_error": {...}}, ...}}

`params` holds the fitted rows of `robot/virtual/servo_params.py` (the rest: the committed fit's),
`supply_v` the supply the fit found the arm on (it stands in for `virtual.follower_supply_v` on that
arm), `fitted_on` the recording, episodes, joint map and date, `fit_error` the fit's cost and the
held-out fidelity. An arm the file does not name moves under the committed fit (`servo_fitted.json`).
"""

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from robot.errors import ConfigError
from robot.virtual.servo_params import ServoParams, load_fitted, params_from_rows

ABOUT = "Each follower arm's fitted servo table (robot/virtual/servo_params.py rows); written by so101-fit"


class ServoTableError(ConfigError):
    """A servo table file that cannot be read or written."""


@dataclass(frozen=True)
class ArmTable:
    """One follower arm's fitted table and where it came from."""

    params: ServoParams
    supply_v: float | None = None  # None: the rig's virtual.follower_supply_v
    document: dict = field(default_factory=dict)  # the arm's whole entry (provenance, fit error), as stored


def read_servo_tables(path: Path) -> dict[str, ArmTable]:
    """Arm name -> its table, from a file so101-fit wrote.

    Raises:
        ServoTableError: the file is missing, not JSON, or holds rows the model does not have.
    """
    try:
        document = json.loads(path.read_text())
        arms = document["arms"]
        tables, committed = {}, load_fitted()
        for arm, entry in arms.items():
            supply = entry.get("supply_v")
            params = params_from_rows(entry["params"], f"{path} arms.{arm}", committed)
            tables[arm] = ArmTable(params, None if supply is None else float(supply), entry)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ServoTableError(
            f"virtual.servo_table={path}: cannot read it ({type(e).__name__}: {e}). Next: write it again with"
            f" so101-fit --dataset.root=<recording> --config_path=<rig file> --write=true, or remove the line"
        ) from None
    return tables


def arm_params(servo_table: Path | None, arm: str) -> ServoParams:
    """One follower's servo model at the rated supply: its own fitted table, else the committed fit."""
    own = read_servo_tables(servo_table).get(arm) if servo_table is not None else None
    return load_fitted() if own is None else own.params


def arm_supply_v(servo_table: Path | None, arm: str, supply_v: float) -> float:
    """The supply one follower's motors report: the fitted one where the arm has a table, else `supply_v`."""
    own = read_servo_tables(servo_table).get(arm) if servo_table is not None else None
    return own.supply_v if own is not None and own.supply_v is not None else supply_v


def write_arm_tables(path: Path, entries: dict[str, dict]) -> None:
    """Store `entries` (arm -> its entry) in `path`, keeping the arms it already holds and does not replace.

    Written to a temporary file first, then moved over `path`: a crash leaves the old file.

    Raises:
        ServoTableError: the existing file is unreadable, or `path` cannot be written.
    """
    arms: dict[str, dict] = {}
    if path.exists():
        read_servo_tables(path)  # refuse to merge into a file we cannot read
        arms = json.loads(path.read_text())["arms"]
    arms.update(entries)
    text = json.dumps({"about": ABOUT, "arms": dict(sorted(arms.items()))}, indent=2, default=float) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(name, path)
    except OSError as e:
        raise ServoTableError(f"cannot write {path}: {e.strerror or e}. Next: check the folder's permissions") from None
