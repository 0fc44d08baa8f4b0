"""What a dataset's joint numbers mean: degrees, or LeRobot's percent of each joint's calibrated range.

LeRobot 0.6.1 records SO-101 joints in degrees by default, as we do, but datasets recorded with
`use_degrees=False` (older LeRobot, many public SO-101 datasets) hold -100..100 per joint, the range's
ends clamped to exactly +/-100. Read as degrees, such a dataset moves a joint by the wrong amount
(wrist_roll ~1.7x too far), so the units are detected from the recording's own evidence and stated:

    beyond     a body joint past +/-100                               -> degrees
    grid       follower readings on the STS3215's degree grid          -> degrees (LeRobot converts a
               (raw steps x 360/4095, around a whole or half step)        raw step to (raw - mid) x 360/4095)
    clamps     body joints sitting at exactly +/-100 on some frames   -> percent (the range clamp)
    otherwise                                                         -> unknown: state it

The grid comes before the clamps: 100 degrees is 1137.5 steps, a grid point wherever a joint's
range middle falls between two steps, so an arm in degrees can read exactly 100.0 (a loaded
machine's demo recording did, and its checkpoint was refused as percent).

Grippers read 0..100 in both conventions and are never evidence. A live replay refuses anything
but degrees until the person states the units (`--dataset.units=degrees`).
"""

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from robot.joints import GRIPPER

STEP_DEG = 360.0 / 4095.0  # one STS3215 step in LeRobot's degree conversion
GRID_TOLERANCE_STEPS = 0.02  # float32 storage keeps a degree value within this of its grid point, steps
MIN_CLAMPED_SHARE = 0.005  # frames at exactly +/-100 that mark the range clamp (one in 200)
ON_GRID_SHARE = 0.9  # share of readings on the degree grid that marks degrees
OFF_GRID_SHARE = 0.3  # below this (chance is ~8 %), values within +/-100 read as percent
MIN_GRID_ENDS = 4  # statistics: ends off +/-100 needed to judge by the grid (all on it by chance: 0.08^4)


class JointUnits(StrEnum):
    """`--dataset.units`: detect them, or state them."""

    AUTO = "auto"  # detect from the recording
    DEGREES = "degrees"  # LeRobot 0.6.1's default and ours
    PERCENT = "percent"  # LeRobot's percent of range (-100..100; grippers 0..100)


@dataclass(frozen=True)
class UnitsVerdict:
    """The units a dataset's joints are in, and why we think so."""

    units: str  # "degrees", "percent" or "unknown"
    evidence: str  # in words, for the run's header and the report
    stated: bool = False  # given by the person (--dataset.units), not detected

    def describe(self, option: str = "--dataset.units") -> str:
        """One phrase: the units and their source (`option`: the flag that states them)."""
        how = f"stated with {option}" if self.stated else f"detected: {self.evidence}"
        names = {"degrees": "degrees", "percent": "percent of each joint's range", "unknown": "unknown units"}
        return f"{names[self.units]} ({how})"


def on_degree_grid(values: np.ndarray) -> np.ndarray:
    """Which values are LeRobot degrees of a servo reading: whole or half STS3215 steps (float32 kept)."""
    steps = np.asarray(values, dtype=np.float64) / STEP_DEG * 2.0  # half steps: a range middle may fall between two
    return np.abs(steps - np.round(steps)) <= 2 * GRID_TOLERANCE_STEPS


def detect_units(values: np.ndarray, names: tuple[str, ...]) -> UnitsVerdict:
    """The units of joint values (rows: frames; columns named `names`), from their own evidence.

    Follower readings (observation.state) are the best evidence: a policy's or a ramp's actions are
    off the degree grid even in degrees.
    """
    body = [i for i, name in enumerate(names) if GRIPPER not in name]
    matrix = np.asarray(values, dtype=np.float64)[:, body] if body else np.zeros((0, 0))
    finite = matrix[np.isfinite(matrix)]
    if finite.size == 0:
        return UnitsVerdict("unknown", "no body joint values to judge by")
    peak = float(np.abs(finite).max())
    if peak > 100.5:
        return UnitsVerdict("degrees", f"body joints reach {peak:.1f}, past the +/-100 of percent units")
    on_grid = float(np.mean(on_degree_grid(finite)))
    if on_grid >= ON_GRID_SHARE:
        return UnitsVerdict("degrees", f"{on_grid:.0%} of body joint values lie on the servo's degree grid")
    clamped = int(np.isclose(np.abs(matrix), 100.0, rtol=0, atol=1e-4).any(axis=1).sum())
    if clamped >= max(1, MIN_CLAMPED_SHARE * len(matrix)):
        return UnitsVerdict("percent", f"{clamped} of {len(matrix)} frames hold a body joint at exactly +/-100")
    if on_grid < OFF_GRID_SHARE:
        return UnitsVerdict("percent", f"body joints stay within +/-100 and off the degree grid ({on_grid:.0%} on it)")
    return UnitsVerdict("unknown", f"{on_grid:.0%} of body joint values on the degree grid, none at +/-100")


def resolve_units(option: JointUnits, values: np.ndarray, names: tuple[str, ...]) -> UnitsVerdict:
    """The units as the person stated them, else as detected."""
    if option is JointUnits.AUTO:
        return detect_units(values, names)
    return UnitsVerdict(option.value, "", stated=True)


def units_from_statistics(minimum: np.ndarray, maximum: np.ndarray, names: tuple[str, ...]) -> UnitsVerdict:
    """The units a policy was trained in, from its training data's per-joint min and max (its normalizer's stats).

    A checkpoint keeps no frames, only statistics: one past +/-100 can only be degrees; ends that all
    lie on the degree grid (a few, besides any at +/-100, itself a grid point) are readings in degrees;
    a body joint whose min or max is exactly +/-100 is otherwise the range clamp of percent units;
    anything else is unknown.
    """
    body = [i for i, name in enumerate(names) if GRIPPER not in name]
    if not body:
        return UnitsVerdict("unknown", "no body joint in its statistics")
    ends = np.concatenate([np.asarray(minimum, dtype=np.float64)[body], np.asarray(maximum, dtype=np.float64)[body]])
    peak = float(np.abs(ends).max())
    if peak > 100.5:
        return UnitsVerdict("degrees", f"its training data reach {peak:.1f} on a body joint, past percent's +/-100")
    at_clamp = np.isclose(np.abs(ends), 100.0, rtol=0, atol=1e-4)
    others = ends[~at_clamp]
    if others.size >= MIN_GRID_ENDS and float(np.mean(on_degree_grid(others))) >= ON_GRID_SHARE:
        return UnitsVerdict(
            "degrees", f"its training data's {others.size} other joint ends lie on the servo's degree grid"
        )
    clamped = [names[body[i % len(body)]] for i in np.flatnonzero(at_clamp)]
    if clamped:
        return UnitsVerdict("percent", f"its training data hold {', '.join(dict.fromkeys(clamped))} at exactly +/-100")
    return UnitsVerdict("unknown", "its training data stay within +/-100 with no joint at the range clamp")
