"""run_session: how a recording session's loop ends, and that an interrupted episode is discarded."""

import contextlib
import signal

import pytest

from robot.rig import SafetyStopError
from robot.signals import SignalStop, StopSignals
from teleop.session_run import run_session
from teleop.stop_reason import StopKind, StopReason


class Loop:
    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error

    def run(self) -> None:
        if self.error is not None:
            raise self.error


class Session:
    def __init__(self) -> None:
        self.abandoned = 0

    def abandon_episode(self) -> None:
        self.abandoned += 1


class PolicyError(Exception):
    pass


@pytest.mark.parametrize(
    ("error", "kind", "text", "abandoned"),
    [
        (None, StopKind.DONE, "done", 0),
        (KeyboardInterrupt(), StopKind.SIGNAL, "Ctrl-C (the episode in progress was discarded)", 1),
        (SafetyStopError("e-stop"), StopKind.SAFETY, "e-stop (the episode in progress was discarded)", 1),
        (PolicyError("NaN in chunk 3"), StopKind.FAILURE, "the policy failed: NaN in chunk 3", 1),
    ],
)
def test_how_the_session_stopped_and_the_episode_in_progress(error, kind, text, abandoned):
    session = Session()
    failures = {PolicyError: "the policy failed: {error}"}
    reason = run_session(Loop(error), session, contextlib.nullcontext(), failures)
    assert reason == StopReason(kind, text)
    assert reason.failed is (kind in (StopKind.SAFETY, StopKind.FAILURE))  # the command then exits 1
    assert session.abandoned == abandoned


def test_other_errors_propagate_and_discard_nothing():
    session = Session()
    with pytest.raises(ValueError, match="a bug"):
        run_session(Loop(ValueError("a bug")), session, contextlib.nullcontext())
    assert session.abandoned == 0


class SignalledLoop:
    """A loop that receives stop signals while it runs (as the main thread's handler would run them)."""

    def __init__(self, stops, *signals: int) -> None:
        self.stops = stops
        self.signals = signals
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True

    def run(self) -> None:
        for signum in self.signals:
            self.stops.handle(signum)


class Rig:
    def __init__(self) -> None:
        self.estops = 0

    def estop(self) -> None:
        self.estops += 1

    def __enter__(self) -> "Rig":
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def test_a_signal_stops_the_loop_and_discards_the_episode_in_progress():
    stops, session = StopSignals(announce=lambda line: None), Session()
    loop = SignalledLoop(stops, signal.SIGHUP)
    assert run_session(loop, session, contextlib.nullcontext(), stops=stops) == StopReason(
        StopKind.SIGNAL, "SIGHUP (the episode in progress was discarded)"
    )
    assert loop.stopped
    assert session.abandoned == 1


def test_a_second_signal_in_the_loop_estops_and_cuts_the_wait_for_the_save_short():
    stops, session, rig = StopSignals(announce=lambda line: None), Session(), Rig()
    loop = SignalledLoop(stops, signal.SIGTERM, signal.SIGTERM)

    def command() -> None:
        with stops.rig(rig):
            run_session(loop, session, contextlib.nullcontext(), stops=stops)
            with stops.finishing():  # the command's wait for the save
                pytest.fail("the wait for the save must be cut short")

    with pytest.raises(SignalStop):
        command()
    assert rig.estops == 1
    assert session.abandoned == 1  # the loop ended at its next tick: the episode in progress was dropped
