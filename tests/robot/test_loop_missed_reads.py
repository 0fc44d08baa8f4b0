"""The control loop rides out failed bus reads for `max_stale_s` of its own clock, then stops the rig.

The bound is in seconds, not ticks: a busy machine stalls the loop for a time, whatever the rate. The
emulator loses the left follower's position replies (its status polls still answer), and the loop
runs on a stepped clock so that "how long" is exact: each tick is one period after the last.
"""

import time

import pytest

from robot.config import CalibrationConfig, RigConfig
from robot.control_loop import MAX_STALE_OBSERVATION_S, ControlLoop
from robot.errors import MotorTimeoutError
from robot.rig import BimanualRig
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.faults import FaultAction, FaultKind, FaultMatch, FaultRule
from robot.virtual.inprocess import in_process_ports
from robot.virtual.precalibrated import write_calibration_files
from robot.virtual.rig_model import VirtualRigModel

FPS = 32  # a period exact in binary, so a run of ticks adds up to exactly its length in seconds
PRESENT_POSITION = (56, 57)
STALE_TICKS = int(MAX_STALE_OBSERVATION_S * FPS)  # ticks that start less than the bound after the first miss


class SteppedClock:
    """The loop timer's clock: it moves only when the timer sleeps, to the deadline it sleeps to."""

    def __init__(self) -> None:
        self.now_s = float(int(time.monotonic()) + 1)  # after the rig's wall-clock acts; whole, so sums are exact

    def __call__(self) -> float:
        return self.now_s

    def sleep(self, duration_s: float) -> None:
        self.now_s += duration_s


class _Still:
    """An action source (robot.control_loop.ActionSource) that asks for where the followers are."""

    def action(self, observation, tick):
        return observation.state()


class LoseReplies:
    """A hook that makes the emulator lose the left follower's position replies from one step to another."""

    def __init__(self, model: VirtualRigModel, loop: ControlLoop, *, from_step: int, to_step: int | None) -> None:
        self.model, self.loop, self.from_step, self.to_step = model, loop, from_step, to_step
        self.rule = FaultRule(
            FaultMatch(bus="left_follower", instruction="SYNC_READ", address=PRESENT_POSITION),
            FaultAction(FaultKind.DROP_REPLY),
        )
        self.stale: list[bool] = []
        self.sent: list[dict[str, float]] = []

    def on_step(self, step) -> None:
        self.stale.append(step.stale_observation)
        self.sent.append(step.sent)
        if self.loop.steps == self.from_step:
            self.model.faults.append(self.rule)
        if self.loop.steps == self.to_step:
            self.model.faults.remove(self.rule)
        if self.loop.steps >= 60:
            self.loop.stop()


@pytest.fixture
def rig_and_model(tmp_path):
    model = VirtualRigModel(VirtualRigConfig(timing=TimingMode.INSTANT, calibrated=True, tremor_steps=0.0))
    root = tmp_path / "calibration"
    write_calibration_files(model, root, "rig")
    with in_process_ports(model) as ports:
        config = RigConfig(id="rig", fps=FPS, calibration=CalibrationConfig(dir=root), virtual=VirtualRigConfig())
        with BimanualRig(config, ports) as rig:
            for _ in range(200):  # end the connect transition on the still arms
                rig.act(rig.observe().state())
                if not rig.in_transition:
                    break
                time.sleep(1 / FPS)
            assert not rig.in_transition
            yield rig, model


def _loop(rig: BimanualRig) -> ControlLoop:
    clock = SteppedClock()
    return ControlLoop(rig, _Still(), clock=clock, sleep=clock.sleep)


def test_reads_that_fail_for_less_than_the_bound_are_ridden_out(rig_and_model):
    rig, model = rig_and_model
    loop = _loop(rig)
    hook = LoseReplies(model, loop, from_step=10, to_step=10 + STALE_TICKS)
    loop.hooks.append(hook)
    loop.run()
    # Ticks 11..26 read nothing and act on tick 10's observation; tick 27 reads again.
    assert hook.stale == [False] * 10 + [True] * STALE_TICKS + [False] * (60 - 10 - STALE_TICKS)
    assert loop.missed_reads == STALE_TICKS
    assert hook.rule.fired >= STALE_TICKS  # every stale tick's read lost its reply (retries lose theirs too)
    # Acting on a stale observation moves nothing: from each stale tick to the next, the largest step of
    # any joint stays within a servo step. (Fresh ticks may step: the still source commands where the
    # followers are, and a follower under gravity rests a little below its goal, so it creeps.)
    pairs = zip(hook.sent, hook.sent[1:], hook.stale, hook.stale[1:], strict=False)
    steps = [abs(b.vector - a.vector).max() for a, b, was, now in pairs if was and now]
    assert len(steps) == STALE_TICKS - 1
    assert max(steps) <= 360 / 4096


def test_reads_that_fail_for_the_bound_stop_the_loop_naming_the_arm(rig_and_model):
    rig, model = rig_and_model
    loop = _loop(rig)
    hook = LoseReplies(model, loop, from_step=10, to_step=None)
    loop.hooks.append(hook)
    with pytest.raises(MotorTimeoutError, match="left_follower"):
        loop.run()
    # The tick that starts exactly MAX_STALE_OBSERVATION_S after the first miss raises instead of acting.
    assert hook.stale == [False] * 10 + [True] * STALE_TICKS
    assert loop.missed_reads == STALE_TICKS + 1


@pytest.mark.parametrize("max_stale_s", [0.25, 1.0])
def test_the_bound_is_seconds_of_the_loops_clock(rig_and_model, max_stale_s):
    rig, model = rig_and_model
    clock = SteppedClock()
    loop = ControlLoop(rig, _Still(), max_stale_s=max_stale_s, clock=clock, sleep=clock.sleep)
    hook = LoseReplies(model, loop, from_step=5, to_step=None)
    loop.hooks.append(hook)
    with pytest.raises(MotorTimeoutError):
        loop.run()
    assert hook.stale.count(True) == int(max_stale_s * FPS)
