"""A LeRobot recording of a person's followers, per arm, as joint trajectories in degrees.

    arms = read_arm_recordings(root, episodes=(0, 1, 2), joint_map="left", units=JointUnits.AUTO)
    arms[0].arm, arms[0].trajectories   -> "left_follower", ((state, action), ...) each (frames, 6), degrees

Read through the dataset package's one reader; `--joint_map` and the units mean what they mean to
so101-replay (`robot/joint_map.py`, `robot/joint_units.py`). Body joints become degrees from the
middle of the range, grippers degrees from the closed end: the servo model works in encoder steps,
and percent units (older LeRobot, `use_degrees=False`) need each joint's calibrated range, taken
from a LeRobot calibration file in the dataset folder when there is one (`*follower*.json`), else a
typical SO-101 follower's (`robot/virtual/profiles.py`).
"""

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from robot.errors import RobotError
from robot.joint_map import SINGLE_ARM_NAMES, parse_joint_map
from robot.joint_units import JointUnits, resolve_units
from robot.joints import BIMANUAL_KEYS, GRIPPER, JOINT_NAMES, Role, Side, arm_name, joint_key
from robot.virtual.profiles import FOLLOWER_PROFILE
from teleop.dataset.errors import UnreadableDatasetError
from teleop.dataset.reader import open_reader

DEG_PER_STEP = 360.0 / 4096
MIN_MOTION_DEG = 5.0  # a joint whose goal moves less than this over the chosen episodes tells the fit nothing
NEVER_FOLLOWED = 0.1  # a joint whose state moved less than this share of its goal's motion did not follow


class TwinRecordingError(RobotError):
    """A recording the servo model cannot be fitted to (nothing was written): exit 1, as any unusable dataset."""


@dataclass(frozen=True)
class ArmRecording:
    """One follower arm's recorded goals and responses, degrees, in `JOINT_NAMES` order."""

    arm: str  # the rig's arm name, e.g. left_follower
    root: Path  # the dataset folder
    fps: float
    episodes: tuple[int, ...]  # the dataset's episode indices, in the order of `trajectories`
    trajectories: tuple[tuple[np.ndarray, np.ndarray], ...]  # (state, action) per episode, each (frames, 6)
    ranges_steps: dict[str, tuple[int, int]]  # each joint's calibrated range, steps
    skipped: dict[str, str]  # joint -> why the fit leaves it out
    units_note: str  # what the numbers were and how they became degrees

    @property
    def frames(self) -> int:
        """Frames in all its episodes."""
        return sum(len(state) for state, _ in self.trajectories)

    def only(self, episodes: tuple[int, ...]) -> "ArmRecording":
        """The same arm with only `episodes` (dataset indices), in that order."""
        keep = [self.episodes.index(e) for e in episodes]
        return replace(self, episodes=tuple(episodes), trajectories=tuple(self.trajectories[i] for i in keep))


def read_arm_recordings(
    root: Path, episodes: tuple[int, ...], joint_map: str, units: JointUnits = JointUnits.AUTO
) -> list[ArmRecording]:
    """Each follower arm the recording holds all six joints of, over `episodes` (empty: all).

    Raises:
        TwinRecordingError: not a follower recording, the wrong joints without a joint map, unknown
            units, an episode it does not hold, or too little motion to fit.
    """
    try:
        reader = open_reader(root, videos=False)
        chosen = episodes or tuple(entry.index for entry in reader.episodes)
        columns = [reader.signals(reader.entry(index)) for index in chosen]
    except UnreadableDatasetError as e:
        raise TwinRecordingError(str(e)) from e
    where = reader.root
    if reader.robot_type and Role.LEADER in reader.robot_type:
        raise TwinRecordingError(
            f"{where} is a leader's recording (robot_type {reader.robot_type}): a leader is moved by hand, so it"
            " says nothing of how a servo follows its goal. Next: fit on a recording whose robot is the followers:"
            " so101-fit --dataset.root=<folder>"
        )
    if reader.state_names is None or columns[0].state is None:
        raise TwinRecordingError(
            f"{where} holds no observation.state: without the followers' readings there is nothing to fit."
            " Next: fit on a recording that has them (so101-record and lerobot-record write them)"
        )
    action_names, state_names = reader.action_names or (), reader.state_names
    mapping = _mapping(action_names, state_names, joint_map, where)
    states = [np.asarray(c.state, dtype=np.float64) for c in columns]
    verdict = resolve_units(units, np.concatenate(states), reader.state_names)
    if verdict.units == "unknown":
        raise TwinRecordingError(
            f"{where}: cannot tell whether its joints are in degrees or percent of range ({verdict.evidence})."
            f" Next: state them, e.g. so101-fit --dataset.root={where} --dataset.units=degrees"
        )
    arms = []
    for side in Side:
        keys = [joint_key(side, joint) for joint in JOINT_NAMES]
        if not all(key in mapping for key in keys):
            continue
        ranges, range_source = _ranges(where, side, bimanual=len(mapping) > len(JOINT_NAMES))
        action_cols = [action_names.index(mapping[k]) for k in keys]
        state_cols = [state_names.index(mapping[k]) for k in keys]
        trajectories = tuple(
            (
                _degrees(np.asarray(c.state, dtype=np.float64)[:, state_cols], verdict.units, ranges),
                _degrees(np.asarray(c.action, dtype=np.float64)[:, action_cols], verdict.units, ranges),
            )
            for c in columns
        )
        note = f"recorded in {verdict.describe()}; converted to degrees with {range_source}"
        recording = ArmRecording(
            arm_name(side, Role.FOLLOWER), where, float(reader.fps), chosen, trajectories, ranges, {}, note
        )
        arms.append(replace(recording, skipped=_skipped(recording)))
    if not arms:
        raise TwinRecordingError(
            f"{where}: the joint map gives no arm all six joints ({', '.join(sorted(mapping))})."
            " Next: map every joint of one arm, e.g. --joint_map=left for a single-arm recording"
        )
    if all(len(a.skipped) == len(JOINT_NAMES) for a in arms):
        why = "; ".join(f"{a.arm} {j}: {w}" for a in arms for j, w in list(a.skipped.items())[:2])
        raise TwinRecordingError(
            f"{where}: too little motion to fit in episodes {_episodes_text(chosen)} ({why}). Next: fit on"
            f" episodes that move every joint through tens of degrees, e.g. --dataset.episodes=all"
        )
    return arms


def _mapping(action: tuple[str, ...], state: tuple[str, ...], joint_map: str, where: Path) -> dict[str, str]:
    """Rig key -> the dataset's column name, present in both the action and the state."""
    mapping = parse_joint_map(joint_map)
    if mapping is None:
        if set(action) == set(SINGLE_ARM_NAMES):
            raise TwinRecordingError(
                f"{where} is a single-arm recording ({len(action)} joints) and this rig has two arms."
                f" Next: say which arm it is: so101-fit --dataset.root={where} --joint_map=left (or right)"
            )
        if set(action) != set(BIMANUAL_KEYS):
            raise TwinRecordingError(
                f"{where}: its action has {len(action)} values ({', '.join(action[:4])}...), not the rig's 12 joints"
                f" nor one arm's 6. Next: say which column is which joint, e.g. --joint_map="
                f"'{json.dumps({BIMANUAL_KEYS[0]: action[0] if action else 'column'})}'"
            )
        mapping = {key: key for key in BIMANUAL_KEYS}
    absent = sorted(name for name in mapping.values() if name not in action or name not in state)
    if absent:
        raise TwinRecordingError(
            f"{where}: the joint map names {', '.join(absent)}, which its action or state does not have;"
            f" its action columns are {', '.join(action)}. Next: correct --joint_map"
        )
    return mapping


def _ranges(folder: Path, side: Side, bimanual: bool) -> tuple[dict[str, tuple[int, int]], str]:
    """One arm's calibrated ranges (steps): a LeRobot calibration file in the folder, else a typical follower's.

    Of several files, a bimanual recording's arm takes the one named for its side (LeRobot names them
    `<id>_left.json`, `<id>_right.json`), a single arm's one named for a follower (`my_follower.json`).
    """
    found = {}
    for path in sorted(p for p in folder.glob("**/*.json") if "meta" not in p.relative_to(folder).parts):
        try:
            raw = json.loads(path.read_text())
            found[path] = {j: (int(raw[j]["range_min"]), int(raw[j]["range_max"])) for j in JOINT_NAMES}
        except (KeyError, ValueError, TypeError, OSError):
            continue
    wanted = str(side) if bimanual else "follower"
    for path in sorted(found, key=lambda p: (wanted not in p.stem, not p.stem.startswith("my_"), p.name)):
        return found[path], f"the calibration {path.relative_to(folder)}"
    typical = {j: (p.range_min, p.range_max) for j, p in FOLLOWER_PROFILE.items()}
    return typical, "no calibration file: a typical SO-101 follower's ranges (robot/virtual/profiles.py)"


def _degrees(values: np.ndarray, units: str, ranges: dict[str, tuple[int, int]]) -> np.ndarray:
    """(frames, 6) in the recording's units -> degrees (body: from the range's middle; gripper: from range_min)."""
    out = values.copy()
    for i, joint in enumerate(JOINT_NAMES):
        low, high = ranges[joint]
        span_deg = (high - low) * DEG_PER_STEP
        if joint == GRIPPER:
            out[:, i] = values[:, i] / 100.0 * span_deg  # 0..100 of the range in every LeRobot version
        elif units == "percent":
            out[:, i] = values[:, i] / 200.0 * span_deg
    return out


def _skipped(recording: ArmRecording) -> dict[str, str]:
    """Joints the fit must leave out: too little motion, or a state that never followed its goal."""
    skipped = {}
    for i, joint in enumerate(JOINT_NAMES):
        asked = float(np.ptp(np.concatenate([a[:, i] for _, a in recording.trajectories])))
        moved = float(np.ptp(np.concatenate([s[:, i] for s, _ in recording.trajectories])))
        if asked < MIN_MOTION_DEG:
            skipped[joint] = f"too little motion (its goal moved {asked:.1f} deg; the fit needs {MIN_MOTION_DEG:g})"
        elif moved < NEVER_FOLLOWED * asked:
            skipped[joint] = f"never followed (state moved {moved:.1f} deg of {asked:.1f} commanded)"
    return skipped


def _episodes_text(episodes: tuple[int, ...]) -> str:
    return ",".join(str(e) for e in episodes)
