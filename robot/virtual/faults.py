"""Fault injection by rules: a match on bus traffic plus an action, declarable in YAML scenarios.

Every motor a packet addresses is one *event* (a sync read of six motors is six events), so a
rule can hit the fourth motor's slot of every sync read, the third READ of address 56, or one
reply in ten with a seeded RNG. Example scenario file:

    faults:
      - name: wrist goes silent
        match: {bus: left_follower, motor: 4, instruction: SYNC_READ, nth: 10, count: 3}
        action: {kind: drop}
      - name: noisy line
        match: {bus: right_leader, probability: 0.01, seed: 7}
        action: {kind: corrupt}
"""

import random
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from robot.errors import RobotError
from robot.feetech.sts3215 import ErrorBit
from robot.virtual.protocol import Instruction


class FaultKind(StrEnum):
    """What a rule does when it fires."""

    DROP = "drop"  # the motor never hears the instruction: not applied, no reply
    DROP_REPLY = "drop_reply"  # applied, but the status packet is lost
    DELAY = "delay"  # the reply comes `delay_ms` late
    CORRUPT = "corrupt"  # the reply's checksum is wrong
    TRUNCATE = "truncate"  # only the first `keep_bytes` of the reply are sent
    GARBAGE = "garbage"  # `garbage_hex` bytes are sent before the reply
    STALE = "stale"  # the motor repeats its previous reply instead of a fresh one
    ERROR_BITS = "error_bits"  # the motor reports `bits` (sticky until faults are cleared)
    UNPLUG = "unplug"  # the motor goes silent; back (power-cycled) after `duration_ms`, or on replug
    POWER_CYCLE = "power_cycle"  # the motor reboots: SRAM lost, EEPROM from flash
    HANGUP = "hangup"  # the serial port goes away (USB cable pulled)


REPLY_KINDS = frozenset(
    {FaultKind.DROP_REPLY, FaultKind.DELAY, FaultKind.CORRUPT, FaultKind.TRUNCATE, FaultKind.GARBAGE}
)

ERROR_BIT_NAMES = {
    "voltage": ErrorBit.VOLTAGE,
    "angle": ErrorBit.ANGLE,
    "overheat": ErrorBit.OVERHEAT,
    "overcurrent": ErrorBit.OVERCURRENT,
    "overload": ErrorBit.OVERLOAD,
}


class ScenarioError(RobotError, ValueError):
    """A fault scenario file or rule is malformed."""


@dataclass(frozen=True)
class FaultMatch:
    """Which events a rule applies to; unset fields match anything."""

    bus: str | None = None  # bus name, e.g. "left_follower"
    motor: int | None = None  # motor ID
    instruction: str | None = None  # PING, READ, WRITE, REG_WRITE, ACTION, RESET, SYNC_READ, SYNC_WRITE
    address: tuple[int, int] | None = None  # inclusive register range the access must touch
    nth: int | None = None  # first matching event that fires (1-based)
    count: int | None = None  # how many events fire from `nth` on (default 1 with nth, else all)
    probability: float = 1.0  # chance that an eligible event fires
    seed: int = 0  # seed of the rule's own RNG, for repeatable scenarios

    def __post_init__(self) -> None:
        if self.instruction is not None and self.instruction not in Instruction.__members__:
            allowed = ", ".join(Instruction.__members__)
            raise ScenarioError(f"match.instruction={self.instruction!r}: expected one of {allowed}")
        if not 0.0 <= self.probability <= 1.0:
            raise ScenarioError(f"match.probability={self.probability}: expected 0..1")
        if self.nth is not None and self.nth < 1:
            raise ScenarioError(f"match.nth={self.nth}: expected >= 1")


@dataclass(frozen=True)
class FaultAction:
    """What happens to a matched event."""

    kind: FaultKind
    delay_ms: float = 0.0  # DELAY: extra latency of the reply
    keep_bytes: int = 4  # TRUNCATE: bytes of the reply that still get through
    garbage_hex: str = "a5 5a 00"  # GARBAGE: bytes sent before the reply
    bits: tuple[str, ...] = ()  # ERROR_BITS: names from voltage, angle, overheat, overcurrent, overload
    duration_ms: float = 0.0  # UNPLUG: how long the motor stays away, ms (0: until replugged)

    def __post_init__(self) -> None:
        unknown = [b for b in self.bits if b not in ERROR_BIT_NAMES]
        if unknown:
            raise ScenarioError(f"action.bits={unknown}: expected names from {sorted(ERROR_BIT_NAMES)}")
        if self.kind is FaultKind.ERROR_BITS and not self.bits:
            raise ScenarioError("action.kind=error_bits needs action.bits, e.g. [overload]")

    @property
    def error_mask(self) -> int:
        """The error bits as one integer."""
        mask = 0
        for name in self.bits:
            mask |= ERROR_BIT_NAMES[name]
        return mask

    @property
    def garbage(self) -> bytes:
        """GARBAGE bytes."""
        return bytes.fromhex(self.garbage_hex)


@dataclass(frozen=True)
class Event:
    """One motor addressed by one packet."""

    bus: str
    motor: int
    instruction: Instruction
    address: tuple[int, int] | None  # inclusive register range touched, None for PING/ACTION


@dataclass
class FaultRule:
    """A match plus an action, with the counters that make `nth` and `count` work."""

    match: FaultMatch
    action: FaultAction
    name: str = ""
    seen: int = 0
    fired: int = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.match.seed)

    def _matches(self, event: Event) -> bool:
        m = self.match
        if m.bus is not None and m.bus != event.bus:
            return False
        if m.motor is not None and m.motor != event.motor:
            return False
        if m.instruction is not None and Instruction[m.instruction] is not event.instruction:
            return False
        if m.address is not None:
            if event.address is None:
                return False
            low, high = m.address
            if event.address[1] < low or event.address[0] > high:
                return False
        return True

    def fires(self, event: Event) -> bool:
        """Count the event and say whether the rule acts on it."""
        if not self._matches(event):
            return False
        self.seen += 1
        m = self.match
        if m.nth is not None and self.seen < m.nth:
            return False
        limit = m.count if m.count is not None else (1 if m.nth is not None else None)
        if limit is not None and self.fired >= limit:
            return False
        if m.probability < 1.0 and self._rng.random() >= m.probability:
            return False
        self.fired += 1
        return True

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly description (for the control API)."""
        return {
            "name": self.name,
            "match": {k: v for k, v in vars(self.match).items() if v is not None},
            "action": {
                "kind": str(self.action.kind),
                **({"bits": list(self.action.bits)} if self.action.bits else {}),
            },
            "seen": self.seen,
            "fired": self.fired,
        }


def rule_from_dict(spec: dict[str, Any]) -> FaultRule:
    """Build a rule from its YAML/JSON form, with errors that name the bad field."""
    if not isinstance(spec, dict) or "action" not in spec:
        raise ScenarioError(f"a fault rule needs 'action' (and usually 'match'), got {spec!r}")
    match_spec = dict(spec.get("match") or {})
    if "address" in match_spec:
        address = match_spec["address"]
        if isinstance(address, int):
            address = (address, address)
        match_spec["address"] = tuple(address)
    action_spec = dict(spec["action"])
    try:
        action_spec["kind"] = FaultKind(action_spec.get("kind"))
    except ValueError:
        allowed = ", ".join(k.value for k in FaultKind)
        raise ScenarioError(f"action.kind={action_spec.get('kind')!r}: expected one of {allowed}") from None
    if "bits" in action_spec:
        action_spec["bits"] = tuple(action_spec["bits"])
    try:
        match = FaultMatch(**match_spec)
        action = FaultAction(**action_spec)
    except TypeError as e:
        raise ScenarioError(f"fault rule {spec.get('name', '')!r}: {e}") from e
    return FaultRule(match=match, action=action, name=str(spec.get("name", "")))


def load_scenario(path: Path) -> list[FaultRule]:
    """Read a YAML scenario file: a mapping with a `faults` list of rules."""
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ScenarioError(f"cannot read fault scenario {path}: {e}") from e
    if not isinstance(document, dict) or not isinstance(document.get("faults"), list):
        raise ScenarioError(f"{path}: expected a mapping with a 'faults' list")
    return [rule_from_dict(spec) for spec in document["faults"]]
