"""GuardedPortHandler on a real pseudo-terminal: what arrived together is read once and handed out in order."""

import errno
import os
import pty
import termios
import tty

import pytest

from robot.feetech.port import DRAIN_ATTEMPTS, GuardedPortHandler

REPLY_A = bytes.fromhex("ff ff 01 04 00 00 08 f2")
REPLY_B = bytes.fromhex("ff ff 02 04 00 10 08 e1")


@pytest.fixture
def line():
    """(the port handler on the pty's slave side, the master fd that plays the bus)."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    handler = GuardedPortHandler(os.ttyname(slave), reply_timeout_ms=20)
    assert handler.openPort()
    yield handler, master
    handler.closePort()
    os.close(slave)
    os.close(master)


def _arm_timeout(handler: GuardedPortHandler, ms: float = 200) -> None:
    handler.packet_start_time = handler.getCurrentTime()
    handler.packet_timeout = ms


def test_two_replies_that_arrive_together_are_read_once_and_served_in_order(line):
    handler, master = line
    os.write(master, REPLY_A + REPLY_B)
    _arm_timeout(handler)
    assert handler.readPort(8) == REPLY_A
    assert handler.ser.in_waiting == 0  # the second reply was read with the first
    assert handler.getBytesAvailable() == 8
    assert handler.readPort(8) == REPLY_B
    assert handler.getBytesAvailable() == 0


def test_a_short_request_is_answered_from_what_was_kept(line):
    handler, master = line
    os.write(master, REPLY_A)
    _arm_timeout(handler)
    assert handler.readPort(3) == REPLY_A[:3]
    assert handler.readPort(100) == REPLY_A[3:]  # what was kept, without waiting for more


def test_clear_port_drops_and_counts_kept_and_waiting_bytes(line):
    handler, master = line
    os.write(master, REPLY_A + REPLY_B)
    _arm_timeout(handler)
    assert handler.readPort(8) == REPLY_A
    handler.clearPort()
    assert handler.stale_bytes_dropped == 8
    assert handler.getBytesAvailable() == 0
    _arm_timeout(handler, ms=5)
    assert handler.readPort(8) == b""  # nothing stale is handed to the next transaction


def test_read_waits_for_bytes_until_the_attempt_times_out(line):
    handler, _ = line
    _arm_timeout(handler, ms=10)
    start = handler.getCurrentTime()
    assert handler.readPort(8) == b""
    assert handler.getCurrentTime() - start >= 9.0  # it waited in select, it did not spin out at once


class _InterruptedDrain:
    """The serial port's flush (tcdrain) interrupted by `interrupts` signals before it completes."""

    def __init__(self, interrupts: int, error: int = errno.EINTR) -> None:
        self.interrupts, self.error, self.calls = interrupts, error, 0
        self.in_waiting = 0

    def flush(self) -> None:
        self.calls += 1
        if self.calls <= self.interrupts:
            raise termios.error(self.error, os.strerror(self.error))


def test_a_signal_during_the_drain_is_not_a_lost_port(line, monkeypatch):
    handler, _ = line
    monkeypatch.setattr(handler, "ser", _InterruptedDrain(interrupts=2))  # SIGHUP landing twice mid-drain
    handler.clearPort()
    assert handler.ser.calls == 3


def test_the_drain_is_asked_again_a_bounded_number_of_times_and_other_errors_pass(line, monkeypatch):
    handler, _ = line
    monkeypatch.setattr(handler, "ser", _InterruptedDrain(interrupts=DRAIN_ATTEMPTS))
    with pytest.raises(termios.error):
        handler.clearPort()
    assert handler.ser.calls == DRAIN_ATTEMPTS
    monkeypatch.setattr(handler, "ser", _InterruptedDrain(interrupts=1, error=errno.EIO))  # gone: no second try
    with pytest.raises(termios.error):
        handler.clearPort()
    assert handler.ser.calls == 1
