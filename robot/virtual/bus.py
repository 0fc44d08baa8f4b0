"""One virtual Feetech bus: a transport-free state machine, bytes in, timestamped bytes out.

    host bytes --feed(data, t)--> PacketParser --> packets --> motors (registers, physics)
                                                     |                 |
                                               fault rules        status packets
                                                     v                 v
                                   [Emission(t_emit, bytes), ...] <-- timing model

No I/O, threads or sleeps: a transport (pseudo-terminal server, in-process serial) feeds it and
delivers each emission at its time. Timing modes:
- instant: replies are due at once;
- wire: 10 bits a byte at the port's baud, the motor's return delay and a firmware turnaround,
  with the bus busy until the last byte (a sync write delays the next reply);
- usb: wire plus a host-adapter latency on every reply, so loop rates look like real arms.
"""

from dataclasses import dataclass

from robot.config_checks import reject_non_finite
from robot.feetech.sts3215 import BAUD_RATE_BY_INDEX
from robot.virtual.config import TimingMode
from robot.virtual.faults import REPLY_KINDS, Event, FaultAction, FaultKind, FaultRule
from robot.virtual.motor import Motor
from robot.virtual.protocol import BROADCAST_ID, Instruction, Packet, PacketParser, encode_status
from robot.virtual.trace import Trace

DEFAULT_BAUD = 1_000_000


@dataclass(frozen=True)
class TimingConfig:
    """The timing model of a virtual bus."""

    mode: TimingMode = TimingMode.INSTANT  # instant, wire or usb
    firmware_turnaround_us: float = 30.0  # motor processing time before its reply, µs (not documented)
    usb_latency_ms: float = 1.0  # usb mode: host-adapter latency added to each reply, ms (CH34x ~1)

    def __post_init__(self) -> None:
        reject_non_finite(self, "timing")


@dataclass(frozen=True)
class Emission:
    """Bytes the bus sends to the host, due at monotonic time `t_s`."""

    t_s: float
    data: bytes


# Replies closer together than this leave the host adapter as one transfer, s. Back-to-back status
# packets are ~0.1 ms apart at 1 Mbps; injected delays are whole milliseconds.
TRANSFER_GAP_S = 0.0005


def as_transfers(emissions: list[Emission], gap_s: float = TRANSFER_GAP_S) -> list[Emission]:
    """Join replies that follow each other on the line into one delivery, due with the last one.

    A USB-serial adapter does not hand the host each status packet as it ends: it forwards what
    it has every USB frame (or latency-timer tick), so a sync read's six replies (0.5 ms of wire
    time) arrive together. Delivering them together is closer to that than one write per motor,
    and it spares the emulator and the client five wake-ups per sync read (which, on two cores
    shared with four bus processes, is what decided how well four buses overlap).
    """
    joined: list[Emission] = []
    for emission in sorted(emissions, key=lambda e: e.t_s):
        if joined and emission.t_s - joined[-1].t_s <= gap_s:
            joined[-1] = Emission(emission.t_s, joined[-1].data + emission.data)
        else:
            joined.append(emission)
    return joined


@dataclass
class _Reply:
    motor: Motor
    data: bytes
    actions: list[FaultAction]


class VirtualBus:
    """Motors on one serial line, with the line's timing and the rig's fault rules."""

    def __init__(
        self,
        name: str,
        motors: list[Motor],
        *,
        timing: TimingConfig | None = None,
        faults: list[FaultRule] | None = None,
        trace: Trace | None = None,
    ) -> None:
        self.name = name
        self.motors = motors
        self.timing = timing or TimingConfig()
        # Shared with the other buses of the rig: rules name the bus they apply to.
        self.faults = faults if faults is not None else []
        self.trace = trace
        self.port_baud = DEFAULT_BAUD
        self.hung_up = False
        self._parser = PacketParser()
        self._busy_until_s = 0.0

    # --- transport side ------------------------------------------------------------------

    def feed(self, data: bytes, t_s: float) -> list[Emission]:
        """Bytes from the host arrived at `t_s`; returns what the bus will send back, and when."""
        emissions: list[Emission] = []
        for packet in self._parser.feed(data):
            if self.trace:
                self.trace.host_to_bus(t_s, self.name, packet)
            emissions.extend(self._handle(packet, t_s))
            if self.hung_up:
                break
        return emissions

    def set_port_baud(self, baud: int) -> None:
        """The host (re)configured its port; motors at another baud hear only noise."""
        if baud != self.port_baud:
            self.port_baud = baud
            self._parser.reset()

    def parser_stats(self) -> tuple[int, int]:
        """(packets dropped for a bad checksum, noise bytes discarded) since start."""
        return self._parser.dropped_bad_checksum, self._parser.discarded_bytes

    def advance(self, t_s: float) -> None:
        """Bring every motor's mechanics up to `t_s` (for state snapshots)."""
        for motor in self.motors:
            motor.advance(t_s)

    def motor(self, motor_id: int) -> Motor:
        """The motor currently answering to `motor_id`."""
        for motor in self.motors:
            if motor.motor_id == motor_id:
                return motor
        raise KeyError(f"bus {self.name!r} has no motor with id {motor_id}")

    # --- protocol -------------------------------------------------------------------------

    def _listening(self, t_s: float) -> list[Motor]:
        return [m for m in self.motors if m.is_plugged(t_s) and BAUD_RATE_BY_INDEX.get(m.baud_index) == self.port_baud]

    def _handle(self, packet: Packet, t_s: float) -> list[Emission]:
        try:
            inst = Instruction(packet.code)
        except ValueError:
            return []
        listening = self._listening(t_s)
        by_id: dict[int, list[Motor]] = {}
        for motor in listening:
            by_id.setdefault(motor.motor_id, []).append(motor)
        replies: list[_Reply] = []
        p = packet.params
        if packet.motor_id == BROADCAST_ID:
            if inst is Instruction.PING:
                for motor in sorted(listening, key=lambda m: m.motor_id):
                    self._serve(motor, inst, None, t_s, replies, lambda m: b"")
            elif inst is Instruction.SYNC_READ and len(p) >= 2:
                address, length = p[0], p[1]
                for motor_id in p[2:]:
                    for motor in by_id.get(motor_id, ()):
                        self._serve(
                            motor,
                            inst,
                            (address, address + length - 1),
                            t_s,
                            replies,
                            lambda m, a=address, n=length: m.read(a, n, t_s),
                        )
            elif inst is Instruction.SYNC_WRITE and len(p) >= 2:
                address, length = p[0], p[1]
                for i in range(2, len(p) - length, length + 1):
                    motor_id, data = p[i], p[i + 1 : i + 1 + length]
                    for motor in by_id.get(motor_id, ()):
                        span = (address, address + length - 1)
                        self._serve(motor, inst, span, t_s, None, lambda m, d=data: m.write(address, d, t_s))
            elif inst in (Instruction.WRITE, Instruction.REG_WRITE, Instruction.ACTION):
                for motor in listening:
                    self._apply_broadcast(motor, inst, p, t_s)
        else:
            for motor in by_id.get(packet.motor_id, ()):
                self._unicast(motor, packet.motor_id, inst, p, t_s, replies)
        return self._schedule(packet, replies, t_s)

    def _apply_broadcast(self, motor: Motor, inst: Instruction, p: bytes, t_s: float) -> None:
        span = (p[0], p[0] + len(p) - 2) if p else None
        if inst is Instruction.WRITE and p:
            self._serve(motor, inst, span, t_s, None, lambda m: m.write(p[0], p[1:], t_s))
        elif inst is Instruction.REG_WRITE and p:
            self._serve(motor, inst, span, t_s, None, lambda m: m.reg_write(p[0], p[1:]))
        elif inst is Instruction.ACTION:
            self._serve(motor, inst, None, t_s, None, lambda m: m.action(t_s))

    def _unicast(
        self, motor: Motor, addressed_id: int, inst: Instruction, p: bytes, t_s: float, replies: list[_Reply]
    ) -> None:
        def respond(m: Motor) -> bytes:
            match inst:
                case Instruction.PING:
                    return b""
                case Instruction.READ:
                    return m.read(p[0], p[1], t_s) if len(p) >= 2 else b""
                case Instruction.WRITE:
                    if p:
                        m.write(p[0], p[1:], t_s)
                case Instruction.REG_WRITE:
                    if p:
                        m.reg_write(p[0], p[1:])
                case Instruction.ACTION:
                    m.action(t_s)
                case Instruction.RESET:
                    m.factory_reset(t_s)
            return b""

        answers = inst in (Instruction.PING, Instruction.READ) or motor.replies_to_writes
        span: tuple[int, int] | None = None
        if inst is Instruction.READ and len(p) >= 2:
            span = (p[0], p[0] + p[1] - 1)
        elif inst in (Instruction.WRITE, Instruction.REG_WRITE) and p:
            span = (p[0], p[0] + len(p) - 2)
        # The status packet carries the ID that was addressed: after an ID change, the old one.
        self._serve(motor, inst, span, t_s, replies if answers else None, respond, reply_id=addressed_id)

    def _serve(
        self,
        motor: Motor,
        inst: Instruction,
        span: tuple[int, int] | None,
        t_s: float,
        replies: list[_Reply] | None,
        respond,
        reply_id: int | None = None,
    ) -> None:
        """Run one motor's part of a packet through the fault rules, then answer if asked to."""
        event = Event(self.name, motor.motor_id, inst, span)
        actions = [rule.action for rule in self.faults if rule.fires(event)]
        stale = False
        for action in actions:
            match action.kind:
                case FaultKind.DROP:
                    return
                case FaultKind.UNPLUG:
                    motor.unplug(action.duration_ms / 1000.0, t_s)
                    return
                case FaultKind.POWER_CYCLE:
                    motor.power_cycle(t_s)
                    return
                case FaultKind.HANGUP:
                    self.hung_up = True
                    return
                case FaultKind.ERROR_BITS:
                    motor.forced_errors |= action.error_mask
                case FaultKind.STALE:
                    stale = motor.last_reply is not None
        motor_id = motor.motor_id if reply_id is None else reply_id
        params = respond(motor) or b""
        if replies is None:
            return
        fresh = encode_status(motor_id, motor.error_bits(), params)
        data = motor.last_reply if stale and motor.last_reply is not None else fresh
        motor.last_reply = fresh
        replies.append(_Reply(motor, data, [a for a in actions if a.kind in REPLY_KINDS]))

    # --- timing ---------------------------------------------------------------------------

    def _schedule(self, packet: Packet, replies: list[_Reply], t_s: float) -> list[Emission]:
        timing = self.timing
        if timing.mode is TimingMode.INSTANT:
            cursor = t_s
            byte_s = 0.0
        else:
            byte_s = 10.0 / self.port_baud
            start = max(t_s, self._busy_until_s)
            cursor = start + len(packet.raw) * byte_s
        latency_s = timing.usb_latency_ms / 1000.0 if timing.mode is TimingMode.USB else 0.0
        emissions: list[Emission] = []
        for reply in replies:
            if timing.mode is not TimingMode.INSTANT:
                cursor += reply.motor.return_delay_s + timing.firmware_turnaround_us * 1e-6
                cursor += len(reply.data) * byte_s
            emissions.extend(self._faulted(reply, cursor + latency_s))
        self._busy_until_s = cursor
        return emissions

    def _faulted(self, reply: _Reply, due_s: float) -> list[Emission]:
        data, note = reply.data, ""
        for action in reply.actions:
            note = str(action.kind)
            match action.kind:
                case FaultKind.DROP_REPLY:
                    data = b""
                case FaultKind.DELAY:
                    due_s += action.delay_ms / 1000.0
                case FaultKind.CORRUPT:
                    data = data[:-1] + bytes([data[-1] ^ 0x5A]) if data else data
                case FaultKind.TRUNCATE:
                    data = data[: action.keep_bytes]
                case FaultKind.GARBAGE:
                    data = action.garbage + data
        if self.trace and (data or note):
            self.trace.bus_to_host(due_s, self.name, data, note)
        return [Emission(due_s, data)] if data else []
