"""The scripted operator's side of motor setup and port discovery: cables plugged and pulled on cue."""

import time
from pathlib import Path

from robot.virtual.client import VirtualRigClient

SETTLE_S = 0.05  # a replugged motor boots from flash; the emulator answers at once, a little slack


class VirtualMotorCue:
    """Implements `robot.setup.motors.MotorCue` for one virtual arm: its motors' cables, one at a time."""

    def __init__(self, client: VirtualRigClient, bus: str) -> None:
        self.client = client
        self.bus = bus

    def connect_only(self, joint: str) -> None:
        """Pull every other motor's cable, plug `joint`'s in."""
        self.client.connect_only(self.bus, joint)
        time.sleep(SETTLE_S)

    def connect_all(self) -> None:
        """The whole daisy chain connected again."""
        self.client.connect_all(self.bus)
        time.sleep(SETTLE_S)


class VirtualHands:
    """The person of port discovery on the virtual rig: plugs and pulls adapters, wiggles arms."""

    def __init__(self, client: VirtualRigClient, links: dict[str, str]) -> None:
        self.client = client
        self._links = links  # arm name -> its emulated bus's link path

    def plug_or_unplug(self, arm: str) -> None:
        """Pull the arm's USB adapter if it is plugged in, plug it in if not."""
        if Path(self._links[arm]).exists():
            self.client.hangup(arm)
        else:
            self.client.reopen(arm)

    def plug_in(self, arm: str) -> None:
        """Plug the arm's adapter in (if it is not already)."""
        if not Path(self._links[arm]).exists():
            self.client.reopen(arm)

    def wiggle(self, arm: str, joint: str = "wrist_flex", fraction: float = 0.35) -> None:
        """Move one joint of the arm by hand (the hand holds it there until released)."""
        self.client.set_hand(arm, joint, fraction)

    def release(self, arm: str, joint: str = "wrist_flex") -> None:
        """Let go of the joint."""
        self.client.set_hand(arm, joint, None)
