"""Real SO-101 follower recordings (LeRobot v3) as joint trajectories in degrees, for `servo_fit`.

A recording folder holds `meta/info.json` and `data/chunk-*/file-*.parquet`. Older LeRobot
recorded body joints in percent of the calibrated range (-100..100, `use_degrees=False`) and the
gripper in 0..100; 0.6.1 records body joints in degrees. Both become degrees from the middle of
the range (the gripper: from the closed end), using the arm's calibration JSON when the folder
holds one (`**/*follower*.json`), else the ranges of the virtual follower's profile (a typical
SO-101 calibration). What was done is recorded in `Recording.units_note`.
"""

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from robot.joints import GRIPPER, JOINT_NAMES
from robot.virtual.profiles import FOLLOWER_PROFILE

DEG_PER_STEP = 360.0 / 4096
# Where the two recordings the committed fit used come from (they are not committed: no licence).
KNOWN_SOURCES = {
    "SamueleSandrini__record-test": "github SamueleSandrini/record-test @ c6d0de30 (dataset at the root)",
    "alanyukeroo__TECHIN-517-writeup": "github alanyukeroo/TECHIN-517-writeup @ cfd91f70, so101_test/",
}


@dataclass(frozen=True)
class Recording:
    """One recording's follower trajectories, degrees, in `JOINT_NAMES` order."""

    name: str
    fps: float
    episodes: list[tuple[np.ndarray, np.ndarray]]  # (state, action), each (frames, 6), degrees
    ranges_steps: dict[str, tuple[int, int]]  # each joint's calibrated range, steps
    skipped: dict[str, str]  # joint -> why it is left out
    units_note: str

    @property
    def source(self) -> str:
        """Where the recording came from, when known."""
        return KNOWN_SOURCES.get(self.name, "unknown source")

    @property
    def frames(self) -> int:
        """Frames in all episodes."""
        return sum(len(s) for s, _ in self.episodes)


def find_recordings(folder: Path | None) -> list[Path]:
    """Recording folders under `folder` (itself, or its subfolders), sorted by name."""
    if folder is None or not folder.is_dir():
        return []
    if (folder / "meta" / "info.json").is_file():
        return [folder]
    return sorted(p for p in folder.iterdir() if (p / "meta" / "info.json").is_file())


def _calibration(folder: Path) -> tuple[dict[str, tuple[int, int]], str]:
    candidates = sorted(folder.glob("**/*follower*.json"))
    # Prefer "my_follower"-style names (the id LeRobot's examples use) when a course repo holds several.
    candidates.sort(key=lambda p: (not p.stem.startswith("my_"), p.name))
    for path in candidates:
        try:
            raw = json.loads(path.read_text())
            ranges = {j: (int(raw[j]["range_min"]), int(raw[j]["range_max"])) for j in JOINT_NAMES}
        except (KeyError, ValueError, TypeError):
            continue
        return ranges, f"calibration {path.relative_to(folder)}"
    defaults = {j: (p.range_min, p.range_max) for j, p in FOLLOWER_PROFILE.items()}
    return defaults, "no calibration file: ranges of a typical SO-101 follower (robot/virtual/profiles.py)"


def to_degrees(values: np.ndarray, joint: str, percent: bool, ranges: dict[str, tuple[int, int]]) -> np.ndarray:
    """One joint's recorded values in degrees (body: from the range's middle; gripper: from range_min)."""
    low, high = ranges[joint]
    span_deg = (high - low) * DEG_PER_STEP
    if joint == GRIPPER:
        return values / 100.0 * span_deg  # RANGE_0_100 in every LeRobot version
    return values / 200.0 * span_deg if percent else values


def load_recording(folder: Path, units: str = "auto") -> Recording:
    """Read a LeRobot v3 recording of an SO-101 follower; `units` auto, degrees or range_m100.

    Raises:
        ValueError: no data files, or the state/action features are not the six SO-101 joints.
    """
    info = json.loads((folder / "meta" / "info.json").read_text())
    names = info["features"]["observation.state"]["names"]
    expected = [f"{j}.pos" for j in JOINT_NAMES]
    if list(names) != expected:
        raise ValueError(f"{folder}: observation.state names {names}; expected {expected}")
    files = sorted(folder.glob("data/chunk-*/file-*.parquet"))
    if not files:
        raise ValueError(f"{folder}: no data/chunk-*/file-*.parquet")
    frame = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    state = np.stack(frame["observation.state"].to_numpy()).astype(float)
    action = np.stack(frame["action"].to_numpy()).astype(float)
    body = [i for i, j in enumerate(JOINT_NAMES) if j != GRIPPER]
    percent = units == "range_m100" or (units == "auto" and np.abs(action[:, body]).max() <= 100.5)
    ranges, source = _calibration(folder)
    for i, joint in enumerate(JOINT_NAMES):
        state[:, i] = to_degrees(state[:, i], joint, percent, ranges)
        action[:, i] = to_degrees(action[:, i], joint, percent, ranges)
    skipped = {}
    for i, joint in enumerate(JOINT_NAMES):
        moved, asked = np.ptp(state[:, i]), np.ptp(action[:, i])
        if asked > 5 and moved < 0.1 * asked:
            skipped[joint] = f"never followed (state moved {moved:.1f} deg of {asked:.1f} commanded)"
    episodes = []
    for _, rows in frame.groupby("episode_index", sort=True):
        index = rows.index.to_numpy()
        episodes.append((state[index], action[index]))
    unit_text = "percent of range (-100..100), gripper 0..100" if percent else "degrees, gripper 0..100"
    note = f"recorded in {unit_text}; converted to degrees with {source}"
    return Recording(folder.name, float(info["fps"]), episodes, ranges, skipped, note)
