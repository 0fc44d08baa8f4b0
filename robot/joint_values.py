"""`JointValues`: one value per joint of both arms, the currency between the rig's parts.

    JointValues.from_vector(chunk_row)     # a policy's (12,) action, in BIMANUAL_KEYS order
    goal = obs.state().with_joint(Side.LEFT, GRIPPER, 100.0)
    goal[Side.LEFT, "elbow_flex"]          # degrees (the gripper: percent of its range)
    goal.side(Side.RIGHT)                  # {"shoulder_pan": ..., "gripper": ...}: one arm's goal
    goal.to_flat()                         # LeRobot's {"left_shoulder_pan.pos": ...}: adapters only

Action sources return it, the control loop's steps carry it, the rig's safety layer takes it and
returns what it sent as one; the hooks that record or measure read its vector. Inside is a
read-only float64 (2, 6) array: rows in `Side` order, columns in `JOINT_NAMES` order, so its
flattened vector is exactly the dataset's and the checkpoints' `BIMANUAL_KEYS` order. Units are the
rig's (robot/joints.py): body joints in degrees, the gripper in percent of its calibrated range.

LeRobot's flat `left_shoulder_pan.pos` dict appears only where LeRobot is spoken: an arm's bus
(per arm, `side()`), the dataset's names, the remote policy's wire, a virtual camera's pose.
"""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from robot.joints import BIMANUAL_KEYS, JOINT_NAMES, Side, joint_key

_SIDES: tuple[Side, ...] = tuple(Side)
_SHAPE = (len(_SIDES), len(JOINT_NAMES))
_COLUMN = {joint: i for i, joint in enumerate(JOINT_NAMES)}
_ROW = {side: i for i, side in enumerate(_SIDES)}


@dataclass(frozen=True, eq=False)
class JointValues:
    """Both arms' joints: body joints in degrees, grippers in percent; immutable."""

    array: np.ndarray  # float64 (2, 6): rows in Side order, columns in JOINT_NAMES order

    def __post_init__(self) -> None:
        values = np.array(self.array, dtype=np.float64)  # a copy: the caller's array stays theirs
        if values.shape != _SHAPE:
            raise ValueError(f"joint values have shape {values.shape}; expected {_SHAPE} (sides x joints)")
        values.flags.writeable = False
        object.__setattr__(self, "array", values)

    @classmethod
    def from_vector(cls, values: np.ndarray | list[float]) -> "JointValues":
        """From 12 values in BIMANUAL_KEYS order (a policy's action, a dataset row)."""
        vector = np.asarray(values, dtype=np.float64)
        if vector.shape != (len(BIMANUAL_KEYS),):
            raise ValueError(f"a joint vector has shape {vector.shape}; expected ({len(BIMANUAL_KEYS)},)")
        return cls(vector.reshape(_SHAPE))

    @classmethod
    def from_sides(cls, sides: Mapping[Side, Mapping[str, float]]) -> "JointValues":
        """From one `{joint: value}` per arm (what each arm reads or is sent)."""
        missing = [joint_key(s, j) for s in _SIDES for j in JOINT_NAMES if s not in sides or j not in sides[s]]
        if missing:
            raise ValueError(f"joint values lack {', '.join(missing)}")
        return cls(np.array([[float(sides[s][j]) for j in JOINT_NAMES] for s in _SIDES]))

    @classmethod
    def from_flat(cls, flat: Mapping[str, float]) -> "JointValues":
        """From LeRobot's flat dict (`left_shoulder_pan.pos` keys); for adapters."""
        missing = [key for key in BIMANUAL_KEYS if key not in flat]
        if missing:
            raise ValueError(f"joint values lack {', '.join(missing)}")
        return cls.from_vector([float(flat[key]) for key in BIMANUAL_KEYS])

    @property
    def vector(self) -> np.ndarray:
        """The 12 values in BIMANUAL_KEYS order (read-only)."""
        return self.array.reshape(-1)

    # Not a mapping: iterate `vector`, `sides()` or `to_flat()`, whichever order is meant.
    __iter__ = None

    def __getitem__(self, key: tuple[Side, str]) -> float:
        side, joint = key
        return float(self.array[_ROW[side], _COLUMN[joint]])

    def side(self, side: Side) -> dict[str, float]:
        """One arm's values by joint name (what its bus is sent)."""
        return dict(zip(JOINT_NAMES, self.array[_ROW[side]].tolist(), strict=True))

    def sides(self) -> dict[Side, dict[str, float]]:
        """Each arm's values by joint name."""
        return {side: self.side(side) for side in _SIDES}

    def to_flat(self) -> dict[str, float]:
        """LeRobot's flat dict (`left_shoulder_pan.pos` keys); for adapters and logs."""
        return dict(zip(BIMANUAL_KEYS, self.vector.tolist(), strict=True))

    def with_joint(self, side: Side, joint: str, value: float) -> "JointValues":
        """A copy with one joint changed."""
        values = self.array.copy()
        values[_ROW[side], _COLUMN[joint]] = value
        return JointValues(values)

    def fill_missing(self, fallback: "JointValues") -> "JointValues":
        """NaN joints (not driven by the source) take the fallback's value."""
        return JointValues(np.where(np.isnan(self.array), fallback.array, self.array))

    def max_abs_difference(self, other: "JointValues") -> float:
        """The largest per-joint difference, in each joint's unit (degrees, or percent for a gripper)."""
        return float(np.max(np.abs(self.array - other.array)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JointValues) and bool(np.array_equal(self.array, other.array, equal_nan=True))

    def __hash__(self) -> int:
        return hash(self.array.tobytes())

    def __repr__(self) -> str:
        rows = ", ".join(f"{side}=" + np.array2string(self.array[_ROW[side]], precision=2) for side in _SIDES)
        return f"JointValues({rows})"
