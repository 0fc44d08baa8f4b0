"""Stop signals: the first stops the loop (or unwinds), a second SIGINT/SIGTERM in time e-stops and exits."""

import signal

import pytest

from robot.cli import UsageError, run_command
from robot.signals import SignalStop, StopSignals


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Loop:
    def __init__(self) -> None:
        self.stops = 0

    def stop(self) -> None:
        self.stops += 1


class Rig:
    """A context-managed rig that records its e-stops and whether its exit ran to the end."""

    def __init__(self, stops: StopSignals | None = None, signal_in_exit: int | None = None) -> None:
        self.estops = 0
        self.exited = False
        self._stops = stops
        self._signal_in_exit = signal_in_exit

    def estop(self) -> None:
        self.estops += 1

    def __enter__(self) -> "Rig":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._signal_in_exit is not None and self._stops is not None:
            self._stops.handle(self._signal_in_exit)  # a signal while going to rest
        self.exited = True


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def stops(clock: Clock) -> StopSignals:
    return StopSignals(announce=lambda line: None, clock=clock)


def test_a_first_signal_stops_the_loop_only(stops: StopSignals):
    rig, loop = Rig(), Loop()
    with stops.rig(rig), stops.stopping(loop.stop):
        stops.handle(signal.SIGTERM)
    assert loop.stops == 1
    assert rig.estops == 0
    assert not stops.escalated
    assert (stops.reason, stops.exit_code) == ("SIGTERM", 143)
    assert rig.exited


def test_a_second_signal_within_the_window_estops_and_cuts_the_wait_short(stops: StopSignals, clock: Clock):
    rig, loop = Rig(), Loop()

    def command() -> None:
        with stops.rig(rig):
            with stops.stopping(loop.stop):
                stops.handle(signal.SIGINT)
                clock.now += 1.0
                stops.handle(signal.SIGINT)  # inside the loop: no raise, the loop stops at its next tick
            assert rig.estops == 1
            with stops.finishing():  # e.g. waiting for a save: nothing may wait any more
                pytest.fail("a finishing section entered after an escalation must raise")

    with pytest.raises(SignalStop) as raised:
        command()
    assert raised.value.escalated
    assert loop.stops == 2
    assert stops.escalated
    assert (stops.reason, stops.exit_code) == ("Ctrl-C twice: e-stop", 130)
    assert rig.exited  # the rig's own exit still ran (with its e-stop set)


def test_a_second_signal_during_a_save_raises_and_estops(stops: StopSignals, clock: Clock):
    rig = Rig()
    with stops.rig(rig), stops.finishing():
        stops.handle(signal.SIGTERM)  # a first signal while a save completes: it goes on
        clock.now += 2.9
        with pytest.raises(SignalStop):
            stops.handle(signal.SIGTERM)
    assert rig.estops == 1


def test_a_signal_after_the_window_stops_again_without_escalating(stops: StopSignals, clock: Clock):
    rig, loop = Rig(), Loop()
    with stops.rig(rig), stops.stopping(loop.stop):
        stops.handle(signal.SIGTERM)
        clock.now += stops.escalate_within_s + 0.1
        stops.handle(signal.SIGTERM)
    assert (loop.stops, rig.estops, stops.escalated) == (2, 0, False)


@pytest.mark.parametrize("signals", [(signal.SIGHUP, signal.SIGHUP), (signal.SIGTERM, signal.SIGHUP)])
def test_a_hangup_never_escalates(stops: StopSignals, signals: tuple[int, int]):
    # One dropped SSH link may deliver SIGHUP twice; systemd sends SIGHUP right after SIGTERM.
    rig, loop = Rig(), Loop()
    with stops.rig(rig), stops.stopping(loop.stop):
        for signum in signals:
            stops.handle(signum)
    assert (rig.estops, stops.escalated, stops.signum) == (0, False, signals[0])


def test_outside_any_section_a_signal_unwinds_as_ctrl_c_does(stops: StopSignals):
    with pytest.raises(KeyboardInterrupt) as raised:
        stops.handle(signal.SIGHUP)  # e.g. while the rig connects or a policy loads
    assert isinstance(raised.value, SignalStop)
    assert raised.value.signum == signal.SIGHUP
    assert not raised.value.escalated


def test_a_loop_started_after_the_signal_stops_at_once(stops: StopSignals):
    with stops.finishing():
        stops.handle(signal.SIGTERM)
    loop = Loop()
    with stops.stopping(loop.stop):
        assert loop.stops == 1


def test_the_rig_exit_is_never_cut_short_and_a_second_signal_there_estops(stops: StopSignals, clock: Clock):
    rig = Rig(stops, signal_in_exit=signal.SIGTERM)
    with stops.rig(rig), stops.stopping(Loop().stop):
        stops.handle(signal.SIGTERM)
    assert rig.exited
    assert rig.estops == 1  # the second SIGTERM came while it went to rest: it freezes there


def test_real_signals_reach_the_handler_and_the_previous_handlers_come_back(clock: Clock):
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    stops = StopSignals(announce=lambda line: None, clock=clock)
    loop = Loop()
    with stops, stops.stopping(loop.stop):
        signal.raise_signal(signal.SIGTERM)
    assert loop.stops == 1
    assert {signum: signal.getsignal(signum) for signum in before} == before


def test_an_ignored_signal_stays_ignored(clock: Clock):
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with StopSignals(announce=lambda line: None, clock=clock):
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, previous)


@pytest.mark.parametrize(
    ("body", "signum", "code"),
    [
        (lambda: 0, None, 0),
        (lambda: 1, None, 1),
        (lambda: 0, signal.SIGTERM, 143),  # stopped by a signal, then finished cleanly
        (lambda: 1, signal.SIGHUP, 129),  # the body's own "not done" is the signal's doing
        (lambda: (_ for _ in ()).throw(UsageError("bad --fps")), None, 2),
        (lambda: (_ for _ in ()).throw(UsageError("bad --fps")), signal.SIGINT, 2),
    ],
)
def test_exit_status(body, signum: int | None, code: int, clock: Clock):
    stops = StopSignals(announce=lambda line: None, clock=clock)
    if signum is not None:
        with stops.finishing():
            stops.handle(signum)
    assert run_command(body, stops) == code


def test_a_signal_that_unwinds_the_body_exits_128_plus_its_number(clock: Clock):
    stops = StopSignals(announce=lambda line: None, clock=clock)

    def body() -> int:
        stops.handle(signal.SIGTERM)
        return 0

    assert run_command(body, stops) == 143
