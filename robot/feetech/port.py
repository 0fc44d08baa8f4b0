"""The Feetech SDK's port handler with what it lacks for a 30 Hz loop.

The vendor SDK (`scservo_sdk.PortHandler`, which LeRobot's `FeetechMotorsBus` uses):
- never clears stale input before a transaction, so one late reply pairs with the next request
  on that motor and shifts every later reply by one (and can crash `ping()` inside the SDK);
- waits a fixed 34 ms (LeRobot patches it to 50 ms) for every reply, and LeRobot retries on top,
  so a silent motor stalls the loop for ~170 ms;
- measures time with the wall clock.

- busy-polls a non-blocking read while it waits, burning a CPU core per port (two arms and two
  leaders on a 2-core machine starve each other and the encoder).

This subclass resets the input buffer before each transaction, waits `reply_timeout_ms` per
attempt, honours an absolute per-call deadline set by the caller, uses monotonic time, and
sleeps in `select()` until bytes arrive instead of spinning (the GIL is free meanwhile, so
several arms can be driven from several threads at once).
"""

import select
import time

import scservo_sdk as scs

# LeRobot's patched SDK timeout: what connect/configure/calibrate wait for a reply, ms.
SETUP_TIMEOUT_MS = 50.0


class GuardedPortHandler(scs.PortHandler):
    """`scs.PortHandler` with input flushing, a per-attempt timeout and a per-call deadline."""

    def __init__(self, port_name: str, reply_timeout_ms: float, setup_timeout_ms: float = SETUP_TIMEOUT_MS) -> None:
        super().__init__(port_name)
        self.reply_timeout_ms = reply_timeout_ms
        self.setup_timeout_ms = setup_timeout_ms
        # Absolute deadline of the current call, in getCurrentTime() milliseconds; None: no deadline.
        self.deadline_ms: float | None = None
        self.stale_bytes_dropped = 0

    def clearPort(self) -> None:  # noqa: N802 - SDK naming
        """Called by the SDK right before every transmission: drop late replies still buffered."""
        self.ser.flush()
        waiting = self.ser.in_waiting
        if waiting:
            self.stale_bytes_dropped += waiting
            self.ser.reset_input_buffer()

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

    def readPort(self, length: int) -> bytes:  # noqa: N802 - SDK naming
        """Wait (without spinning) until bytes arrive or the attempt's time is up, then read."""
        ser = self.ser
        fileno = getattr(ser, "fileno", None)
        if fileno is not None and not ser.in_waiting:
            now = self.getCurrentTime()
            remaining_ms = self.packet_timeout - (now - self.packet_start_time)
            if self.deadline_ms is not None:
                remaining_ms = min(remaining_ms, self.deadline_ms - now)
            if remaining_ms > 0:
                select.select([fileno()], [], [], remaining_ms / 1000.0)
        return ser.read(length)

    def getCurrentTime(self) -> float:  # noqa: N802 - SDK naming
        """Milliseconds on the monotonic clock (the SDK uses the wall clock, which can jump)."""
        return time.monotonic() * 1000.0
