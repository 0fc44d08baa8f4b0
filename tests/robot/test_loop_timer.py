"""The loop timer on a simulated clock: deadlines, no drift, overruns skipped and counted."""

import pytest

from robot.loop_timer import LoopTimer


class SimClock:
    def __init__(self) -> None:
        self.t = 50.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.t += seconds + 0.0002  # a real sleep wakes a little late


def test_ticks_land_on_absolute_deadlines_without_drift():
    clock = SimClock()
    timer = LoopTimer(30, clock=clock, sleep=clock.sleep)
    timer.start()
    for _ in range(300):
        tick = timer.wait()
        clock.t += 0.010  # a 10 ms step
    assert tick.index == 299
    assert tick.deadline_s == pytest.approx(50.0 + 299 / 30)
    stats = timer.stats()
    assert abs(stats.rate_error) < 1e-4  # the wake-up lateness does not accumulate
    assert stats.overruns == 0
    assert stats.skipped == 0


def test_relative_sleep_would_drift():
    """The contrast: LeRobot's `sleep(1/fps - dt)` accumulates every wake-up delay."""
    clock = SimClock()
    start = clock.t
    for _ in range(300):
        begin = clock.t
        clock.t += 0.010
        clock.sleep(max(0.0, 1 / 30 - (clock.t - begin)))
    achieved = 300 / (clock.t - start)
    assert achieved / 30 - 1 < -0.005


def test_an_overrun_skips_missed_deadlines_instead_of_bursting():
    clock = SimClock()
    timer = LoopTimer(30, clock=clock, sleep=clock.sleep)
    timer.start()
    timer.wait()
    clock.t += 0.100  # a step that took three periods
    tick = timer.wait()
    assert tick.skipped == 2
    assert tick.index == 3
    following = timer.wait()
    assert following.index == 4
    assert following.start_s >= following.deadline_s  # no burst of back-to-back ticks
    assert timer.stats().overruns == 1


def test_a_slightly_late_step_keeps_the_grid():
    clock = SimClock()
    timer = LoopTimer(30, clock=clock, sleep=clock.sleep)
    timer.start()
    timer.wait()
    clock.t += 0.040  # 1.2 periods: the next tick starts late but is not skipped
    tick = timer.wait()
    assert tick.index == 1
    assert tick.skipped == 0
    assert tick.late_s == pytest.approx(0.040 - 1 / 30, abs=1e-3)


def test_rejects_a_nonsense_rate():
    with pytest.raises(ValueError, match="fps=0"):
        LoopTimer(0)
