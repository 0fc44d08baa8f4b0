"""The recording session's state machine on the in-process virtual rig, with a writer double.

The dataset writer has its own real-part tests (tests/teleop/dataset) and the command's end-to-end
tests use the real one; here a double records what the session asks of it.
"""

import numpy as np
import pytest

from robot.cameras.config import VirtualCameraConfig
from robot.control_loop import ControlLoop
from robot.joints import BIMANUAL_KEYS, CameraRole
from robot.stop_flag import StopFlag
from robot.virtual.rig_model import VirtualRigModel
from teleop.gesture import GestureConfig
from teleop.keys import Key
from teleop.leader_source import LeaderSource
from teleop.quality import QualityGates
from teleop.session import Phase, RecordingSession, SessionConfig
from teleop.session_links import EpisodeRules
from tests.support.session_doubles import CAMERAS, LENIENT, PATIENT, ScriptedKeys, WriterDouble

pytestmark = pytest.mark.slow


def record(rig, writer, session_config, *, keys_at=None, gates=None, gesture=False, hooks=()):
    source = LeaderSource(rig)
    pending = dict(keys_at or {})
    ticks = {"n": 0}

    def keys():  # `keys_at`: ticks of recording, whenever the leaders engaged (a loaded machine: later)
        ticks["n"] += session.phase is Phase.RECORDING
        return [pending.pop(ticks["n"])] if ticks["n"] in pending else []

    stop = StopFlag()  # the loop's: the session sets it when it is done
    rules = EpisodeRules(gates or LENIENT, GestureConfig(enabled=gesture))
    session = RecordingSession(rig, writer, session_config, rules, source=source, keys=ScriptedKeys(keys), stop=stop)
    loop = ControlLoop(rig, source, hooks=[session, *hooks], stop_flag=stop)
    loop.run(duration_s=30.0)
    session.wait_for_save()
    return session


def test_episodes_run_for_their_time_then_reset_then_the_session_ends(rig_env):
    writer = WriterDouble()
    with rig_env() as rig:
        session = record(rig, writer, SessionConfig(num_episodes=2, episode_s=1.0, reset_s=0.4), gates=LENIENT)
    assert session.phase is Phase.DONE
    assert writer.calls == ["begin", "save", "begin", "save"], session.cards
    assert [len(e) for e in writer.episodes] == [30, 30]  # 1 s at 30 Hz
    assert [c.verdict for c in session.cards] == ["keep", "keep"]
    deadlines = [f["tick_deadline_s"] for f in writer.episodes[0]]
    # Every frame has its tick's timing facts: deadlines a whole number of periods apart (a busy machine
    # may make the loop skip a deadline; it never records between two).
    periods = np.diff(deadlines) * 30
    assert np.allclose(periods, np.round(periods), atol=1e-6)
    assert (np.round(periods) >= 1).all()
    assert {"overhead.capture_s", "overhead.age_s", "camera_skew_s", "bus_read_s"} <= set(writer.episodes[0][0])


class Heatwave:
    """Heats the left follower's motors past the watchdog's hold temperature for a while."""

    def __init__(self, model: VirtualRigModel, hot_ticks: range) -> None:
        self.motors, self.hot_ticks, self.tick = model.buses["left_follower"].motors, hot_ticks, 0

    def on_step(self, step) -> None:
        self.tick += 1
        for motor in self.motors:
            motor.set_temperature(58.0 if self.tick in self.hot_ticks else 30.0)


def test_ticks_the_watchdog_held_are_marked_so_sent_and_requested_may_differ_there(rig_env, rig_model):
    writer = WriterDouble()
    with rig_env() as rig:
        record(
            rig,
            writer,
            SessionConfig(num_episodes=1, episode_s=4.0, reset_s=0.2),
            hooks=[Heatwave(rig_model, range(30, 70))],
        )
        held_ticks = rig.counters.held_ticks
    frames = writer.episodes[0]
    held = [f for f in frames if f["safety.held"] == 1.0]
    assert 0 < len(held) <= held_ticks  # the hold began inside the episode (it may outlast it)
    assert {f["safety.changed_mask"] for f in held} == {float((1 << 12) - 1)}  # every joint got the held pose
    assert len({tuple(f[f"action.{key}"] for key in BIMANUAL_KEYS) for f in held}) == 1  # one pose, held
    assert any(f["safety.held"] == 0.0 and f["safety.changed_mask"] == 0.0 for f in frames)


def test_rerecord_discards_the_episode_and_records_it_again(rig_env):
    writer = WriterDouble()
    with rig_env() as rig:
        session = record(
            rig, writer, SessionConfig(num_episodes=1, episode_s=4.0, reset_s=0.2), keys_at={60: Key.RERECORD}
        )
    assert writer.calls == ["begin", "discard", "begin", "save"]
    assert writer.saved == [0]
    assert session.recorded == 1


def test_next_ends_early_and_stop_saves_and_finishes(rig_env):
    writer = WriterDouble()
    with rig_env() as rig:
        session = record(
            rig,
            writer,
            SessionConfig(num_episodes=5, episode_s=10.0, reset_s=0.2),
            keys_at={40: Key.NEXT, 70: Key.STOP},
        )
    assert writer.calls == ["begin", "save", "begin", "save"]
    assert session.phase is Phase.DONE
    assert session.recorded == 2


def test_dropped_camera_frames_are_counted_exactly_and_the_episode_is_recorded_again(rig_env):
    dropping = (
        *CAMERAS[:2],
        VirtualCameraConfig(
            "overhead",
            CameraRole.OVERHEAD,
            width=96,
            height=72,
            phase_s=0.009,
            drop_rate=0.05,
            seed=5,
            capture=PATIENT,
        ),
    )
    writer = WriterDouble()
    with rig_env(dropping) as rig:
        schedule = rig.cameras["overhead"].schedule
        drops_only = QualityGates(min_fps=10, max_period_error_p99_ms=200, max_skew_p99_ms=200)
        # Every attempt fails the gates (5 % drops): stop during the second attempt instead of re-recording
        # until the loop's 30 s are up.
        session = record(
            rig,
            writer,
            SessionConfig(num_episodes=1, episode_s=2.0, reset_s=0.2),
            gates=drops_only,
            keys_at={100: Key.STOP},
        )
    first = session.cards[0]
    assert writer.calls[:2] == ["begin", "discard"]  # not kept silently
    assert first.verdict == "rerecord"
    sequences = [int(frame["overhead.sequence"]) for frame in writer.discarded[0]]
    expected = sum(schedule.is_dropped(slot) for slot in range(sequences[0] + 1, sequences[-1]))
    assert expected > 0
    assert first.dropped_frames["overhead"] == expected  # the card counts exactly what the camera lost
    assert f"overhead lost {expected} frame(s)" in first.failed_gates
