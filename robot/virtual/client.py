"""Python client of the virtual rig's control socket (JSON lines over a Unix socket).

client = VirtualRigClient(Path("/run/user/1000/so101-virtual/control.sock"))
client.play("cloth_fold", loop=True)
client.add_fault({"match": {"bus": "left_follower", "motor": 4}, "action": {"kind": "drop"}})
print(client.state("left_follower")[3]["temperature_c"])
"""

import json
import socket
from pathlib import Path
from typing import Any

from robot.errors import RobotError


class VirtualRigControlError(RobotError, RuntimeError):
    """The virtual rig refused a request or could not be reached."""


class VirtualRigClient:
    """One connection to a running virtual rig; methods mirror the control operations."""

    def __init__(self, socket_path: Path, timeout_s: float = 5.0) -> None:
        self.socket_path = socket_path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout_s)
        try:
            self._sock.connect(str(socket_path))
        except OSError as e:
            self._sock.close()
            raise VirtualRigControlError(
                f"no virtual rig answers on {socket_path} ({e}); start one with `so101-sim`"
            ) from e
        self._reader = self._sock.makefile("rb")

    def close(self) -> None:
        """Close the connection."""
        self._reader.close()
        self._sock.close()

    def __enter__(self) -> "VirtualRigClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and return the reply, raising on `ok: false`."""
        self._sock.sendall(json.dumps({"op": op, **fields}).encode() + b"\n")
        line = self._reader.readline()
        if not line:
            raise VirtualRigControlError(f"the virtual rig at {self.socket_path} closed the connection")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise VirtualRigControlError(f"{op}: {reply.get('error')}")
        return reply

    def ping(self) -> float:
        """The rig's monotonic clock (it is the same clock as this machine's)."""
        return float(self.request("ping")["t"])

    def ports(self) -> dict[str, str]:
        """Bus name -> device path."""
        return self.request("ports")["ports"]

    def state(self, bus: str | None = None) -> dict[str, list[dict[str, Any]]] | list[dict[str, Any]]:
        """Motor snapshots of every bus, or the list of one bus's motors."""
        state = self.request("state", bus=bus)["state"]
        return state[bus] if bus else state

    def play(self, trajectory: str, *, arms: list[str] | None = None, loop: bool = False, speed: float = 1.0) -> float:
        """Start a trajectory on the operator's hands; returns its duration in seconds."""
        return float(self.request("play", trajectory=trajectory, arms=arms, loop=loop, speed=speed)["duration_s"])

    def perform(self, plan: dict[str, Any]) -> float:
        """Play a task plan (`FoldPlan.to_json()`) once on the leaders' hands; returns its duration in seconds."""
        return float(self.request("perform", plan=plan)["duration_s"])

    def stop(self) -> None:
        """Stop the operator (hands stay where they are)."""
        self.request("stop")

    def operator(self) -> dict[str, Any]:
        """What the operator is doing."""
        return self.request("operator")["operator"]

    def set_hand(self, bus: str, joint: str, fraction: float | None) -> None:
        """Hold one joint of a torque-off arm at a fraction of its range."""
        self.request("set_hand", bus=bus, joint=joint, fraction=fraction)

    def set_object(self, bus: str, holding: bool = True) -> None:
        """Put the cloth in (or out of) a follower's gripper."""
        self.request("set_object", bus=bus, holding=holding)

    def set_temperature(self, bus: str, motor: int | str, celsius: float) -> None:
        """Force a motor's temperature."""
        self.request("set_temperature", bus=bus, motor=motor, celsius=celsius)

    def poke(self, bus: str, motor: int | str, address: int, data: bytes) -> None:
        """Overwrite a motor's raw memory (e.g. a wrong Model_Number)."""
        self.request("poke", bus=bus, motor=motor, address=address, hex=data.hex())

    def add_fault(self, rule: dict[str, Any]) -> int:
        """Install a fault rule (the YAML scenario form); returns its index."""
        return int(self.request("add_fault", rule=rule)["index"])

    def clear_faults(self) -> None:
        """Remove every fault rule and injected error bit."""
        self.request("clear_faults")

    def faults(self) -> list[dict[str, Any]]:
        """Installed rules with their counters."""
        return self.request("faults")["faults"]

    def power_cycle(self, bus: str, motor: int | str | None = None) -> None:
        """Reboot one motor, or every motor of a bus."""
        self.request("power_cycle", bus=bus, motor=motor)

    def unplug(self, bus: str, motor: int | str, duration_ms: float = 0.0) -> None:
        """Pull a motor's cable (for `duration_ms`, or until `replug`)."""
        self.request("unplug", bus=bus, motor=motor, duration_ms=duration_ms)

    def replug(self, bus: str, motor: int | str) -> None:
        """Plug an unplugged motor back in."""
        self.request("replug", bus=bus, motor=motor)

    def connect_only(self, bus: str, joint: str) -> None:
        """Leave only `joint`'s motor connected on `bus` (motor setup: one motor at a time)."""
        self.request("connect_only", bus=bus, joint=joint)

    def connect_all(self, bus: str) -> None:
        """Connect every motor of `bus` again (the arm's chain)."""
        self.request("connect_all", bus=bus)

    def hangup(self, bus: str) -> None:
        """Make a bus's serial port vanish."""
        self.request("hangup", bus=bus)

    def reopen(self, bus: str) -> dict[str, str]:
        """Bring a hung-up port back."""
        return self.request("reopen", bus=bus)["ports"]

    def trace(self, bus: str | None = None, last: int | None = None) -> list[dict[str, Any]]:
        """Recorded traffic."""
        return self.request("trace", bus=bus, last=last)["records"]

    def trace_clear(self) -> None:
        """Forget recorded traffic."""
        self.request("trace_clear")

    def trace_dump(self, path: Path, bus: str | None = None) -> int:
        """Write the trace as JSONL on the rig's side; returns the record count."""
        return int(self.request("trace_dump", path=str(path), bus=bus)["records"])

    def stats(self) -> dict[str, Any]:
        """Per-bus counters."""
        return self.request("stats")["stats"]
