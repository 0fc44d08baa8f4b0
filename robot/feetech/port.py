"""The Feetech SDK's port handler with what it lacks for a 30 Hz loop.

The vendor SDK (`scservo_sdk.PortHandler`, which LeRobot's `FeetechMotorsBus` uses):
- never clears stale input before a transaction, so one late reply pairs with the next request
  on that motor and shifts every later reply by one (and can crash `ping()` inside the SDK);
- waits a fixed 34 ms (LeRobot patches it to 50 ms) for every reply, and LeRobot retries on top,
  so a silent motor stalls the loop for ~170 ms;
- measures time with the wall clock.

- busy-polls a non-blocking read while it waits, burning a CPU core per port (two arms and two
  leaders on a 2-core machine starve each other and the encoder);
- reads each motor's status packet with its own system calls (an ioctl, a select and a read),
  although a USB adapter hands the host a sync read's six replies in one or two transfers.

This subclass resets the input buffer before each transaction, waits `reply_timeout_ms` per
attempt, honours an absolute per-call deadline set by the caller, uses monotonic time, and
sleeps in `select()` until bytes arrive instead of spinning (the GIL is free meanwhile, so
several arms can be driven from several threads at once). It reads whatever has arrived and
keeps what the SDK has not asked for yet, so a sync read of six motors costs one wake-up and
one read when the replies come together, instead of six of each (measured: the four buses of a
bimanual tick then overlap instead of queueing for the two cores).
"""

import errno
import select
import termios
import time

import scservo_sdk as scs

# LeRobot's patched SDK timeout: what connect/configure/calibrate wait for a reply, ms.
SETUP_TIMEOUT_MS = 50.0
# A signal (SIGHUP, SIGTERM, SIGINT) landing while the output drains interrupts tcdrain with EINTR,
# and Python retries no termios call by itself (PEP 475 covers os, select, socket, time): the drain
# is asked again, at most this many times, instead of the port being taken for gone.
DRAIN_ATTEMPTS = 10


class GuardedPortHandler(scs.PortHandler):
    """`scs.PortHandler` with input flushing, a per-attempt timeout and a per-call deadline."""

    def __init__(self, port_name: str, reply_timeout_ms: float, setup_timeout_ms: float = SETUP_TIMEOUT_MS) -> None:
        super().__init__(port_name)
        self.reply_timeout_ms = reply_timeout_ms
        self.setup_timeout_ms = setup_timeout_ms
        # Absolute deadline of the current call, in getCurrentTime() milliseconds; None: no deadline.
        self.deadline_ms: float | None = None
        self.stale_bytes_dropped = 0
        self._unread = bytearray()  # bytes read from the port that the SDK has not asked for yet

    def clearPort(self) -> None:  # noqa: N802 - SDK naming
        """Called by the SDK right before every transmission: drop late replies still buffered."""
        self._drain()
        waiting = self.ser.in_waiting
        if self._unread:
            self.stale_bytes_dropped += len(self._unread)
            self._unread.clear()
        if waiting:
            self.stale_bytes_dropped += waiting
            self.ser.reset_input_buffer()

    def _drain(self) -> None:
        """Wait until the output was sent (tcdrain), again when a signal interrupted the wait."""
        for attempt in range(1, DRAIN_ATTEMPTS + 1):
            try:
                self.ser.flush()
                return
            except termios.error as e:
                if not e.args or e.args[0] != errno.EINTR or attempt == DRAIN_ATTEMPTS:
                    raise

    def setupPort(self, cflag_baud: int) -> bool:  # noqa: N802 - SDK naming
        """(Re)open the port; bytes kept from the old one are dropped with it."""
        self._unread.clear()
        return super().setupPort(cflag_baud)

    def getBytesAvailable(self) -> int:  # noqa: N802 - SDK naming
        """Bytes waiting in the tty plus those already read and kept."""
        return len(self._unread) + self.ser.in_waiting

    def setPacketTimeout(self, packet_length: int) -> None:  # noqa: N802 - SDK naming
        """Wait for `packet_length` bytes of wire time plus the reply timeout.

        Inside a deadline (the control path) an attempt waits `reply_timeout_ms` and the caller
        retries; outside one (connect, configure, calibration, which LeRobot does not retry) it
        waits LeRobot's own 50 ms.
        """
        self.packet_start_time = self.getCurrentTime()
        wait_ms = self.reply_timeout_ms if self.deadline_ms is not None else self.setup_timeout_ms
        self.packet_timeout = self.tx_time_per_byte * packet_length + wait_ms

    def isPacketTimeout(self) -> bool:  # noqa: N802 - SDK naming
        """The SDK's per-packet timeout, cut short by the call's deadline."""
        if self.deadline_ms is not None and self.getCurrentTime() > self.deadline_ms:
            self.packet_timeout = 0
            return True
        return super().isPacketTimeout()

    def _remaining_ms(self) -> float:
        now = self.getCurrentTime()
        remaining_ms = self.packet_timeout - (now - self.packet_start_time)
        if self.deadline_ms is not None:
            remaining_ms = min(remaining_ms, self.deadline_ms - now)
        return remaining_ms

    def readPort(self, length: int) -> bytes:  # noqa: N802 - SDK naming
        """Up to `length` bytes: kept ones first, else wait (without spinning) and read all that came."""
        unread = self._unread
        if len(unread) < length:
            ser = self.ser
            fileno = getattr(ser, "fileno", None)
            if fileno is None:  # not a posix port (a test double): no select, nothing kept
                return ser.read(length)
            waiting = ser.in_waiting
            if not waiting and not unread:
                remaining_ms = self._remaining_ms()
                if remaining_ms > 0:
                    select.select([fileno()], [], [], remaining_ms / 1000.0)
                waiting = ser.in_waiting
            if waiting or not unread:
                # pyserial's read keeps its error semantics (a vanished device raises SerialException).
                unread += ser.read(max(waiting, length - len(unread)))
        taken = bytes(unread[:length])
        del unread[:length]
        return taken

    def getCurrentTime(self) -> float:  # noqa: N802 - SDK naming
        """Milliseconds on the monotonic clock (the SDK uses the wall clock, which can jump)."""
        return time.monotonic() * 1000.0
