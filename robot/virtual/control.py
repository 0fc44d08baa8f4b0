"""The control API of the virtual rig: one JSON object per request, one per reply.

    -> {"op": "play", "trajectory": "cloth_fold", "loop": true}
    <- {"ok": true, "duration_s": 13.5}
    -> {"op": "add_fault",
        "rule": {"match": {"bus": "left_follower", "motor": 4}, "action": {"kind": "drop"}}}
    <- {"ok": true, "index": 0}
    -> {"op": "nope"}
    <- {"ok": false, "error": "unknown op 'nope'; expected one of ..."}

Operations: ping, ports, state, set_hand, play, perform, stop, operator, set_object, set_temperature, poke,
add_fault, clear_faults, faults, power_cycle, unplug, replug, connect_only, connect_all, hangup, reopen,
trace, trace_clear, trace_dump, stats, save_flash. The transport (the pty server) supplies the port operations.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from robot.joints import JOINT_NAMES, MOTOR_IDS
from robot.virtual.faults import ScenarioError, rule_from_dict
from robot.virtual.rig_model import VirtualRigModel

Request = dict[str, Any]
Reply = dict[str, Any]


class PortOps(Protocol):
    """What the transport can do to its serial ports."""

    def ports(self) -> dict[str, str]:
        """Bus name -> stable device path."""
        ...

    def hangup(self, bus: str) -> None:
        """Make the port disappear, as if the USB cable were pulled."""
        ...

    def reopen(self, bus: str) -> None:
        """Bring a hung-up port back (same link path, new device)."""
        ...


class ControlError(ValueError):
    """A request the control API cannot honour; its message goes back to the client."""


def _motor_id(request: Request) -> int:
    motor = request.get("motor")
    if isinstance(motor, int):
        return motor
    if isinstance(motor, str) and motor in MOTOR_IDS:
        return MOTOR_IDS[motor]
    raise ControlError(f"motor={motor!r}: expected an id 1..6 or a joint name from {list(JOINT_NAMES)}")


class ControlHandler:
    """Turns control requests into operations on a `VirtualRigModel` and its ports."""

    def __init__(self, model: VirtualRigModel, ports: PortOps) -> None:
        self.model = model
        self.port_ops = ports
        self._ops: dict[str, Callable[[Request], Reply]] = {
            name.removeprefix("op_"): getattr(self, name) for name in dir(self) if name.startswith("op_")
        }

    def handle(self, request: Request) -> Reply:
        """Run one request; failures become `{"ok": false, "error": ...}`."""
        op = request.get("op")
        handler = self._ops.get(op) if isinstance(op, str) else None
        if handler is None:
            return {"ok": False, "error": f"unknown op {op!r}; expected one of {sorted(self._ops)}"}
        try:
            return {"ok": True, **handler(request)}
        except (ControlError, ScenarioError, KeyError, ValueError, TypeError) as e:
            return {"ok": False, "error": str(e)}

    def _bus(self, request: Request) -> str:
        bus = request.get("bus")
        if bus not in self.model.buses:
            raise ControlError(f"bus={bus!r}: expected one of {list(self.model.buses)}")
        return bus

    # --- operations ------------------------------------------------------------------------

    def op_ping(self, request: Request) -> Reply:
        """The rig's monotonic clock: proves it is alive."""
        return {"t": self.model.clock()}

    def op_ports(self, request: Request) -> Reply:
        """Bus name -> device path."""
        return {"ports": self.port_ops.ports()}

    def op_state(self, request: Request) -> Reply:
        """Motor snapshots (true joint positions, registers, temperatures) of one or all buses."""
        bus = self._bus(request) if request.get("bus") is not None else None
        return {"state": self.model.state(bus)}

    def op_set_hand(self, request: Request) -> Reply:
        """Hold one joint of a torque-off arm at a fraction of its range (`fraction: null` lets go)."""
        bus = self._bus(request)
        joint = request.get("joint")
        if joint not in JOINT_NAMES:
            raise ControlError(f"joint={joint!r}: expected one of {list(JOINT_NAMES)}")
        fraction = request.get("fraction")
        self.model.operator.set_hand(bus, joint, None if fraction is None else float(fraction), self.model.clock())
        return {}

    def op_play(self, request: Request) -> Reply:
        """Play a named trajectory on the operator's hands (`arms`, `loop`, `speed`)."""
        trajectory = self.model.trajectory(str(request.get("trajectory")), request.get("arms"))
        speed = float(request.get("speed", 1.0))
        # One start time for every bus process (stamped by the front), so the hands agree.
        start = float(request.get("start_s") or self.model.clock())
        duration = self.model.operator.play(trajectory, start, speed=speed, loop=bool(request.get("loop", False)))
        return {"duration_s": duration}

    def op_perform(self, request: Request) -> Reply:
        """Play a task plan once: per side, follower goals at plan times, and grasp windows (`plan`)."""
        plan = request.get("plan")
        if not isinstance(plan, dict):
            raise ControlError("plan: expected an object with keyframes and grasps (FoldPlan.to_json())")
        trajectory = self.model.performed(plan)
        start = float(request.get("start_s") or self.model.clock())
        return {"duration_s": self.model.operator.play(trajectory, start)}

    def op_stop(self, request: Request) -> Reply:
        """Stop the operator; hands stay where they are."""
        self.model.operator.stop(self.model.clock())
        return {}

    def op_operator(self, request: Request) -> Reply:
        """What the operator is playing and whether it finished."""
        return {"operator": self.model.operator.status(self.model.clock())}

    def op_set_object(self, request: Request) -> Reply:
        """Put the cloth between a follower's jaws (`holding`), or take it away."""
        self.model.set_object(self._bus(request), bool(request.get("holding", True)))
        return {}

    def op_set_temperature(self, request: Request) -> Reply:
        """Force a motor's temperature (an overheating scenario)."""
        motor = self.model.buses[self._bus(request)].motor(_motor_id(request))
        motor.set_temperature(float(request["celsius"]))
        return {}

    def op_poke(self, request: Request) -> Reply:
        """Overwrite a motor's raw memory at `address` with `hex` bytes (read-only registers too)."""
        motor = self.model.buses[self._bus(request)].motor(_motor_id(request))
        motor.poke(int(request["address"]), bytes.fromhex(str(request["hex"])))
        return {}

    def op_add_fault(self, request: Request) -> Reply:
        """Install one fault rule in its YAML/JSON form."""
        rule = rule_from_dict(request.get("rule") or {})
        self.model.faults.append(rule)
        return {"index": len(self.model.faults) - 1}

    def op_clear_faults(self, request: Request) -> Reply:
        """Remove every rule and every injected error bit."""
        self.model.faults.clear()
        for bus in self.model.buses.values():
            for motor in bus.motors:
                motor.forced_errors = 0
        return {}

    def op_faults(self, request: Request) -> Reply:
        """Installed rules with their counters."""
        return {"faults": [rule.as_dict() for rule in self.model.faults]}

    def op_power_cycle(self, request: Request) -> Reply:
        """Reboot one motor (`motor`) or a whole bus."""
        bus = self.model.buses[self._bus(request)]
        t = self.model.clock()
        motors = [bus.motor(_motor_id(request))] if request.get("motor") is not None else bus.motors
        for motor in motors:
            motor.power_cycle(t)
        return {}

    def op_unplug(self, request: Request) -> Reply:
        """Pull a motor's cable, for `duration_ms` or until replugged."""
        motor = self.model.buses[self._bus(request)].motor(_motor_id(request))
        motor.unplug(float(request.get("duration_ms", 0)) / 1000.0, self.model.clock())
        return {}

    def op_replug(self, request: Request) -> Reply:
        """Plug an unplugged motor back in (it boots from flash)."""
        bus = self.model.buses[self._bus(request)]
        motor_id = _motor_id(request)
        for motor in bus.motors:
            if motor.motor_id == motor_id and not motor.plugged:
                motor.replug(self.model.clock())
                return {}
        raise ControlError(f"no unplugged motor {motor_id} on {bus.name}")

    def op_connect_only(self, request: Request) -> Reply:
        """Leave only `joint`'s motor on the bus (the others' cables pulled), as motor setup asks."""
        bus = self.model.buses[self._bus(request)]
        joint = request.get("joint")
        if joint not in JOINT_NAMES:
            raise ControlError(f"joint={joint!r}: expected one of {list(JOINT_NAMES)}")
        t = self.model.clock()
        for name, motor in zip(JOINT_NAMES, bus.motors, strict=True):
            if name != joint and motor.plugged:
                motor.unplug(None, t)
            elif name == joint and not motor.plugged:
                motor.replug(t)
        return {}

    def op_connect_all(self, request: Request) -> Reply:
        """Plug every motor of the bus back in (the arm's daisy chain assembled)."""
        bus = self.model.buses[self._bus(request)]
        t = self.model.clock()
        for motor in bus.motors:
            if not motor.plugged:
                motor.replug(t)
        return {}

    def op_hangup(self, request: Request) -> Reply:
        """Make a bus's serial port vanish, as if its USB cable were pulled."""
        bus = self._bus(request)
        self.model.buses[bus].hung_up = True
        self.port_ops.hangup(bus)
        return {}

    def op_reopen(self, request: Request) -> Reply:
        """Bring a hung-up port back under the same link."""
        bus = self._bus(request)
        self.model.buses[bus].hung_up = False
        self.port_ops.reopen(bus)
        return {"ports": self.port_ops.ports()}

    def op_trace(self, request: Request) -> Reply:
        """Recorded traffic of one or all buses (`last` records)."""
        bus = self._bus(request) if request.get("bus") is not None else None
        last = request.get("last")
        return {"records": self.model.trace.records(bus, int(last) if last else None)}

    def op_trace_clear(self, request: Request) -> Reply:
        """Forget recorded traffic."""
        self.model.trace.clear()
        return {}

    def op_trace_dump(self, request: Request) -> Reply:
        """Write the trace as JSON lines to `path` on the rig's side."""
        path = Path(str(request["path"]))
        bus = self._bus(request) if request.get("bus") is not None else None
        return {"records": self.model.trace.dump_jsonl(path, bus), "path": str(path)}

    def op_stats(self, request: Request) -> Reply:
        """Per-bus counters: port baud, hang-up, bad checksums, noise bytes."""
        stats = {}
        for name, bus in self.model.buses.items():
            stats[name] = {
                "port_baud": bus.port_baud,
                "hung_up": bus.hung_up,
                "bad_checksums": bus.parser_stats()[0],
                "discarded_bytes": bus.parser_stats()[1],
            }
        return {"stats": stats}

    def op_save_flash(self, request: Request) -> Reply:
        """Persist the motors' EEPROM to the state directory now."""
        self.model.save_flash(list(self.port_ops.ports()))
        return {}
