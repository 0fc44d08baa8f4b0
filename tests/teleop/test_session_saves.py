"""What a recording session counts as saved: only episodes whose save returned, i.e. what LeRobot loads.

Writer doubles drive the session's decisions (record again, end short, the final wait); the real
DatasetWriter, with its fault points, gives the round trip: what the session reports equals what
LeRobotDataset loads from the folder, after a save the writer gave up on and after a short video.
"""

import re
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from robot.control_loop import ControlLoop
from robot.stop_flag import StopFlag
from teleop.dataset.durable import DurableDataset
from teleop.dataset.errors import DiskFullError, ShortVideoError
from teleop.dataset.faults import ENV
from teleop.dataset.lerobot_adapter import video_frame_count
from teleop.dataset.writer_process import DatasetWriter
from teleop.episode_save import UnsavedEpisode
from teleop.gesture import GestureConfig
from teleop.keys import Key
from teleop.leader_source import LeaderSource
from teleop.quality import GateAction
from teleop.run_report import describe_saves
from teleop.session import Phase, RecordingSession, SessionConfig
from teleop.session_links import EpisodeRules
from tests.support.session_doubles import CAMERAS, LENIENT, EventLog, ScriptedKeys, WriterDouble
from tests.teleop.dataset.helpers import TASK, frame, load, spec

# These tests are about saves: an episode a loaded machine slowed past the gates is kept with a mark,
# never recorded again (a discard would add calls to the writer's log that no save caused; a busy
# machine did that once in 2,175 tests).
KEEP_SLOW_EPISODES = replace(LENIENT, on_fail=GateAction.KEEP)

pytestmark = pytest.mark.slow


def verdicts(session: RecordingSession) -> list[str]:
    """Each card's verdict, with a kept episode's gate mark dropped: whether a loaded machine slowed
    an episode past the gates is not what these tests are about (its save is)."""
    return [card.verdict.removesuffix(" (marked)") for card in session.cards]


RIG_CAMERAS = tuple((camera.name, camera.height, camera.width) for camera in CAMERAS)  # the writer's shapes


class FailingSaves(WriterDouble):
    """A writer double whose saves raise the given errors in turn (None: that save succeeds)."""

    def __init__(self, *outcomes: BaseException | None) -> None:
        super().__init__()
        self.outcomes = list(outcomes)

    def save_episode(self, quality: dict) -> int:
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is None:
            return super().save_episode(quality)
        self.calls.append("save failed")
        self._current = None  # the writer ends the episode whatever the outcome
        raise outcome


class StalledSave(WriterDouble):
    """A writer double whose save blocks until released, and that says a save ends within 0.2 s."""

    longest_save_s = 0.2

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def save_episode(self, quality: dict) -> int:
        self.release.wait(timeout=30)
        return super().save_episode(quality)


def record(rig, writer, config: SessionConfig, events: list[str], stop_at: int | None = None) -> RecordingSession:
    """Run a session on the rig until it ends (at most 30 s of loop), then wait for its last save.

    `stop_at`: press q at this tick of the first episode (the leaders engage after a varying time).
    """
    source = LeaderSource(rig)
    recording = {"ticks": 0}

    def keys() -> list[Key]:
        recording["ticks"] += session.phase is Phase.RECORDING
        return [Key.STOP] if recording["ticks"] == stop_at and session.phase is Phase.RECORDING else []

    stop = StopFlag()  # the loop's: the session sets it when it is done
    out = EventLog(events)
    rules = EpisodeRules(KEEP_SLOW_EPISODES, GestureConfig(enabled=False))
    session = RecordingSession(rig, writer, config, rules, source=source, keys=ScriptedKeys(keys), out=out, stop=stop)
    loop = ControlLoop(rig, source, hooks=[session], stop_flag=stop)
    loop.run(duration_s=30.0)
    session.wait_for_save()
    return session


# --- the session's decisions, with writer doubles ---------------------------------------------


def test_a_save_with_short_videos_is_not_counted_and_the_episode_is_recorded_again(rig_env):
    short = ShortVideoError("ds: episode 0's videos came out short (overhead 29 of 30 frames); rolled back")
    writer, events = FailingSaves(short), []
    with rig_env() as rig:
        session = record(rig, writer, SessionConfig(num_episodes=1, episode_s=1.0, reset_s=0.2), events)
    assert writer.calls == ["begin", "save failed", "begin", "save"]  # the last episode too is recorded again
    assert session.recorded == 1 == len(writer.saved)
    assert session.unsaved == [UnsavedEpisode(0, str(short))]
    assert session.save_failure is None
    assert verdicts(session) == ["not saved", "keep"]
    assert f"episode 0 is NOT saved and will be recorded again: {short}" in events


def test_a_failed_save_ends_the_session_with_only_the_durable_episodes_counted(rig_env):
    full = DiskFullError("ds: the disk is full (saving episode 1). The episode was rolled back. Next: free space")
    writer, events = FailingSaves(None, full), []
    with rig_env() as rig:
        session = record(rig, writer, SessionConfig(num_episodes=3, episode_s=1.0, reset_s=0.2), events)
    assert writer.calls == ["begin", "save", "begin", "save failed"]  # nothing recorded after it
    assert session.phase is Phase.DONE
    assert session.recorded == 1
    assert session.save_failure == UnsavedEpisode(1, str(full))
    assert f"episode 1 is NOT saved: {full}" in events
    assert verdicts(session) == ["keep", "not saved"]
    folder = Path("/data/fold")
    assert describe_saves(session, 0, folder) == [
        f"episode 1 is NOT saved: {full}",
        f"1 episode(s) saved to {folder} in this run",
    ]


def test_the_final_wait_is_the_writers_own_bound_and_an_unfinished_save_is_not_counted(rig_env):
    writer, events = StalledSave(), []
    try:
        with rig_env() as rig:  # q during the first episode: its save is still running when the loop ends
            session = record(rig, writer, SessionConfig(num_episodes=3, episode_s=5.0, reset_s=0.2), events, 20)
    finally:
        writer.release.set()
    assert session.recorded == 0
    assert session.save_failure == UnsavedEpisode(0, "its save had not ended after 0.2 s")


# --- the real writer: the count is what LeRobot loads ------------------------------------------


def test_a_save_the_writer_gives_up_on_is_not_counted_and_the_summary_is_what_lerobot_loads(
    rig_env, tmp_path, monkeypatch
):
    root = tmp_path / "ds"
    with DurableDataset.open(spec(root, cameras=RIG_CAMERAS)) as earlier:  # a resumed dataset: 1 episode
        earlier.begin_episode(TASK)
        for index in range(5):
            earlier.add_frame(*frame(0, index, RIG_CAMERAS))
        earlier.save_episode({})
    monkeypatch.setenv(ENV, "stop@save:journaled")  # the writer stops itself inside the save: a hung save
    writer = DatasetWriter(spec(root, cameras=RIG_CAMERAS, save_timeout_s=2.0))  # not 120 s: a test's wait
    report = writer.open()
    monkeypatch.delenv(ENV)  # armed in the writer process only
    assert writer.longest_save_s >= 2.0
    events: list[str] = []
    try:
        with rig_env() as rig:  # q ends episode 1 early; the loop ends with its save running
            session = record(rig, writer, SessionConfig(num_episodes=2, episode_s=5.0, reset_s=0.2), events, 20)
    finally:
        writer.close()
    assert session.recorded == 0
    assert [unsaved.index for unsaved in session.unsaved] == [1]
    assert session.save_failure is session.unsaved[0]
    assert "did not answer within 2 s and was killed" in session.save_failure.reason
    assert any(event.startswith("episode 1 is NOT saved: ") for event in events)
    summary = describe_saves(session, report.episodes, root)
    assert summary[-1] == f"0 episode(s) saved to {root} in this run; with the 1 from before, the dataset holds 1"
    assert load(root).meta.total_episodes == report.episodes + session.recorded == 1
    with DurableDataset.open(spec(root, cameras=RIG_CAMERAS)) as reopened:  # the next run undoes the stalled save
        assert reopened.report.repair.rolled_back_episode == 1
        assert reopened.episodes == 1


def test_a_save_with_short_videos_is_rolled_back_and_recorded_again_through_the_real_writer(
    rig_env, tmp_path, monkeypatch
):
    root = tmp_path / "ds"
    monkeypatch.setenv(ENV, "skip@encoder:feed")  # one camera frame never reaches its encoder
    writer = DatasetWriter(spec(root, cameras=RIG_CAMERAS, resume=False))
    report = writer.open()
    monkeypatch.delenv(ENV)
    events: list[str] = []
    try:
        with rig_env() as rig:
            session = record(rig, writer, SessionConfig(num_episodes=1, episode_s=1.0, reset_s=0.2), events)
    finally:
        writer.close()
    assert session.recorded == 1
    assert [unsaved.index for unsaved in session.unsaved] == [0]
    assert re.search(r"videos came out short \(\w+ 29 of 30 frames\)", session.unsaved[0].reason)
    assert session.save_failure is None
    assert verdicts(session) == ["not saved", "keep"]
    assert any(event.startswith("episode 0 is NOT saved and will be recorded again: ") for event in events)
    assert describe_saves(session, report.episodes, root)[-1] == f"1 episode(s) saved to {root} in this run"
    dataset = load(root)
    assert dataset.meta.total_episodes == session.recorded
    for name, _, _ in RIG_CAMERAS:  # the kept attempt's videos are whole
        path = root / dataset.meta.get_video_file_path(0, f"observation.images.{name}")
        assert video_frame_count(path) == dataset.meta.episodes[0]["length"] == 30
