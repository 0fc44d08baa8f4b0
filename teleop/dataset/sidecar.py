"""Per-episode facts kept beside a LeRobot dataset, where no LeRobot loader looks.

    meta/so101/episodes/episode-000003/timing.parquet   one row per frame: frame_index + timing facts
    meta/so101/episodes/episode-000003/quality.json     the episode's quality card

LeRobot reads parquet only from data/*/ and meta/episodes/*/ (and info/stats/tasks), so these
files never become features and `lerobot-train` never feeds them to a policy; they still travel
with the dataset (copying the directory, push_to_hub). They are written inside an episode's commit,
so they exist exactly for the saved episodes, until another tool edits the dataset (sidecar_check.py).

This module is the on-disk layout every reader of our datasets speaks, evaluation/ included (as
robot/shell/ is the command line every command speaks): it imports nothing of the product.
"""

import dataclasses
import enum
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from robot.joints import GRIPPER
from teleop.dataset.vocabulary import STATE_KEY

SO101_DIR = "meta/so101"  # everything of ours inside a dataset folder
SIDECAR_DIR = f"{SO101_DIR}/episodes"
TIMING_FILE = "timing.parquet"
QUALITY_FILE = "quality.json"
# A frame is idle when every body joint (all but the grippers) moves slower than this: the quality
# card's idle_fraction and the review page's idle spans both count with it.
IDLE_SPEED_DEG_S = 2.0


def idle_frames(states: np.ndarray, names: Sequence[str], fps: float) -> np.ndarray:
    """Per frame, whether no body joint (all but the grippers) moved faster than IDLE_SPEED_DEG_S since the last.

    The first frame takes the second's verdict. The quality card's idle share, the review page's idle
    spans and the trims a curation proposes all count with this rule.
    """
    body = [i for i, name in enumerate(names) if GRIPPER not in name]
    state = np.asarray(states, dtype=np.float64)
    if len(state) < 2 or not body:
        return np.zeros(len(state), dtype=bool)
    speeds = np.abs(np.diff(state[:, body], axis=0)).max(axis=1) * fps
    still = speeds < IDLE_SPEED_DEG_S
    return np.concatenate([still[:1], still])


def episode_dir(root: Path, index: int) -> Path:
    """The sidecar directory of one episode."""
    return Path(root) / SIDECAR_DIR / f"episode-{index:06d}"


def quality_json(quality: Mapping) -> str:
    """Serialise a quality card (numpy scalars, enums, dataclasses and paths allowed).

    Raises:
        TypeError: a value that has no JSON form.
    """
    return json.dumps(quality, indent=1, sort_keys=True, default=_jsonable)


def write_quality(root: Path, index: int, text: str) -> Path:
    """Write an episode's quality card (already serialised with `quality_json`)."""
    path = episode_dir(root, index) / QUALITY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_timing(root: Path, index: int, rows: Sequence[Mapping[str, float]]) -> Path:
    """Write one row of timing facts per frame; keys missing from a row become NaN."""
    columns: dict[str, list[float]] = {}
    for row in rows:
        for key in row:
            columns.setdefault(key, [])
    for key, values in columns.items():
        values.extend(float(row.get(key, np.nan)) for row in rows)
    table = pa.table({"frame_index": pa.array(np.arange(len(rows), dtype=np.int64)), **columns})
    path = episode_dir(root, index) / TIMING_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def read_timing(root: Path, index: int) -> dict[str, np.ndarray]:
    """An episode's timing facts, column by column (frame_index included)."""
    table = pq.read_table(episode_dir(root, index) / TIMING_FILE)
    return {name: table.column(name).to_numpy() for name in table.column_names}


def read_quality(root: Path, index: int) -> dict:
    """An episode's quality card as it was saved."""
    return json.loads((episode_dir(root, index) / QUALITY_FILE).read_text())


def sidecar_indices(root: Path) -> list[int]:
    """The episode indices that have a sidecar folder, in order (whatever the dataset holds now)."""
    folder = Path(root) / SIDECAR_DIR
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        number = path.name.removeprefix("episode-")
        if path.is_dir() and number != path.name and number.isdigit():
            found.append(int(number))
    return sorted(found)


@dataclasses.dataclass(frozen=True)
class SidecarCheck:
    """Whether an episode's sidecar still describes that episode."""

    index: int  # episode index in the dataset as it is now
    status: str  # "ok", "missing" (none kept: another tool recorded it) or "stale" (it describes another episode)
    reason: str = ""  # why it is stale, in words

    @property
    def usable(self) -> bool:
        """Whether its facts may be shown as this episode's."""
        return self.status == "ok"


def check_sidecar(root: Path, index: int, names: Sequence[str], states: np.ndarray) -> SidecarCheck:
    """Does the sidecar kept as episode `index` belong to the episode the dataset holds there now?

    Another tool (LeRobot's lerobot-edit-dataset, a hand edit) may renumber or cut episodes and leave
    our sidecars behind. Each sidecar carries the rig's own log of every frame's joint states, so the
    episode's recorded `observation.state` (`states`, one row per frame, columns named `names`) must
    match it value for value, besides the frame count of the card and the timing file.
    """
    folder = episode_dir(root, index)
    if not (folder / TIMING_FILE).is_file() and not (folder / QUALITY_FILE).is_file():
        return SidecarCheck(index, "missing")
    frames = len(states)
    try:
        card_frames = int(read_quality(root, index).get("frames", frames))
        timing = read_timing(root, index)
    except (OSError, ValueError, TypeError, AttributeError, pa.ArrowException) as error:
        return SidecarCheck(index, "stale", f"its sidecar cannot be read ({error})")
    rows = len(timing.get("frame_index", ()))
    if card_frames != frames or rows != frames:
        return SidecarCheck(index, "stale", f"its sidecar describes {max(card_frames, rows)} frames, it has {frames}")
    logged = [(i, f"state.{name}") for i, name in enumerate(names) if f"state.{name}" in timing]
    for column, key in logged:
        recorded = np.asarray(states[:, column], dtype=np.float32)
        if not np.array_equal(np.asarray(timing[key], dtype=np.float32), recorded):
            return SidecarCheck(index, "stale", f"its sidecar logged other joint states ({key.removeprefix('state.')})")
    return SidecarCheck(index, "ok")


def recorded_states(root: Path) -> tuple[tuple[str, ...], dict[int, np.ndarray]]:
    """The state names and each episode's `observation.state` rows (frame order), read from data/ parquet.

    Raises:
        OSError, ValueError, KeyError, pyarrow.ArrowException: a file cannot be read as LeRobot data.
    """
    info = json.loads((Path(root) / "meta" / "info.json").read_text())
    state = info.get("features", {}).get(STATE_KEY)
    if not isinstance(state, dict) or not state.get("names"):
        return (), {}  # no joint states to check a sidecar against
    names = tuple(str(name) for name in state["names"])
    parts: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    for path in sorted((Path(root) / "data").glob("*/*.parquet")):
        table = pq.read_table(path, columns=["episode_index", "frame_index", STATE_KEY])
        episodes = table.column("episode_index").to_numpy()
        frames = table.column("frame_index").to_numpy()
        column = table.column(STATE_KEY).combine_chunks()
        states = np.asarray(column.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        states = states.reshape(len(column), -1)
        order = np.argsort(episodes, kind="stable")  # one pass per file, not one scan per episode
        found, starts = np.unique(episodes[order], return_index=True)
        for episode, rows in zip(found, np.split(order, starts[1:]), strict=True):
            parts.setdefault(int(episode), []).append((frames[rows], states[rows]))
    out = {}
    for episode, pieces in parts.items():
        frames = np.concatenate([f for f, _ in pieces])
        states = np.concatenate([s for _, s in pieces])
        out[episode] = states[np.argsort(frames, kind="stable")]
    return names, out


def check_all(root: Path) -> list[SidecarCheck]:
    """Every episode's sidecar, and every sidecar folder, checked against the episode at its index now.

    A sidecar whose episode is gone (the dataset holds fewer episodes) is stale too.
    """
    names, states = recorded_states(root)
    checks = []
    for index in sorted(set(sidecar_indices(root)) | set(states)):
        if not names:
            checks.append(SidecarCheck(index, "stale", "the dataset has no observation.state to check it against"))
        elif index not in states:
            checks.append(SidecarCheck(index, "stale", "the dataset holds no such episode now"))
        else:
            checks.append(check_sidecar(root, index, names, states[index]))
    return checks


def _jsonable(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"quality card value {value!r} ({type(value).__name__}) has no JSON form")
