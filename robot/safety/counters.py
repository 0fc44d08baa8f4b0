"""What the safety layer did during a session: the guards' interventions, held ticks, gripper reliefs."""

from dataclasses import dataclass, field

from robot.safety.guard import SafetyEvent


@dataclass
class SafetyCounters:
    """What the safety layer did during the session (the rig's `counters`). One thread (the rig's)."""

    events: list[SafetyEvent] = field(default_factory=list)
    held_ticks: int = 0
    gripper_reliefs: int = 0
    read_failures: int = 0
