"""LeRobot 0.6.1's own SO follower and leader classes, unmodified, against the emulator on a pty.

The person at the arm is played by the virtual rig's scripted operator; LeRobot's prompts are
answered through `input`, and its "press ENTER to stop" poll through `enter_pressed`.
"""

import json
import os
import time
from pathlib import Path

import lerobot.motors.motors_bus as motors_bus
import pytest
import serial
from lerobot.robots.so_follower import SOFollower, SOFollowerRobotConfig
from lerobot.teleoperators.so_leader import SOLeader, SOLeaderTeleopConfig

from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.launcher import VirtualRigProcess
from tests.support.retries import retrying

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    runtime = tmp_path_factory.mktemp("rig")
    # Stock LeRobot waits 50 ms for a reply and, while calibrating, never retries: on a busy
    # 2-core CI machine an emulator at normal priority missed that once. It runs where the
    # product's virtual rig runs it (virtual.yaml), in SCHED_FIFO when permitted, so its replies
    # preempt the rest of the suite as a real motor's firmware would.
    config = VirtualRigConfig(runtime_dir=runtime, timing=TimingMode.WIRE, realtime_priority=9)
    with VirtualRigProcess(config) as process:
        yield process


class ScriptedPerson:
    """Answers LeRobot's calibration prompts by moving the virtual arm."""

    def __init__(self, client, arm: str) -> None:
        self.client = client
        self.arm = arm
        self.sweep_ends_at = float("inf")
        self.prompts: list[str] = []

    def input(self, prompt: str = "") -> str:
        self.prompts.append(prompt)
        if "middle of its range" in prompt:
            time.sleep(self.client.play("calibration_pose", arms=[self.arm]) + 0.3)
            self.sweep_ends_at = time.monotonic() + self.client.play("calibration_sweep", arms=[self.arm]) + 0.2
        return ""

    def enter_pressed(self) -> bool:
        return time.monotonic() > self.sweep_ends_at


def connect_with_retry(make_device, before_each=lambda: None):
    """Connect (and, without a calibration file, calibrate) a LeRobot device; another try after a
    missed reply (two at most), counted in the session's retry tally. `before_each` runs before every attempt (to
    clear what a trace compares).

    LeRobot's calibration writes each register once, with no retry, and waits 50 ms for its
    status packet while its SDK busy-polls. Late in the full suite on a 2-core CI machine that
    wait was missed (twice in one run, never when the module runs alone), most likely by a bus
    process left at ordinary priority waiting for a CPU (robot/virtual/scheduling.py). A real fault
    fails every attempt.
    """
    port = None

    def attempt():
        nonlocal port
        before_each()
        device = make_device()
        port = device.bus.port_handler.port_name
        try:
            device.connect()
        except ConnectionError:
            device.bus.port_handler.closePort()
            raise
        except RuntimeError as e:
            device.bus.port_handler.closePort()
            if "Missing motor IDs" in str(e):  # its handshake pings each motor once: a missed reply reads so
                raise ConnectionError(f"a handshake ping went unanswered: {str(e).splitlines()[0]}") from e
            raise
        return device

    # Two: one stall of the host (a VM's vCPU descheduled ~100 ms, which no priority beats) can cost
    # a ping and then, on the retry, a calibration write (seen once each in one full suite run).
    return retrying(
        attempt,
        what="LeRobot connect",
        retries=2,
        retry_on=(ConnectionError,),
        before_retry=lambda: drain_late_replies(port),
    )


def drain_late_replies(port: str, quiet_s: float = 0.3, limit_s: float = 5.0) -> None:
    """Read the port until it has been silent for `quiet_s`: the missed reply may still come.

    The stock SDK never clears its input before a request (our `GuardedPortHandler` does), and
    opening the port only flushes what has already arrived. A reply that lands after the retry's
    open pairs with its first request: the ping then reads that ping's own reply as the model
    number's and the SDK crashes with an IndexError (seen once in CI).
    """
    with serial.Serial(port, timeout=quiet_s) as ser:
        deadline = time.monotonic() + limit_s
        while ser.read(256) and time.monotonic() < deadline:
            pass


def instruction_sequence(records):
    """The host's packets, without timestamps or checksums: what a golden trace compares."""
    sequence = []
    for record in records:
        if record["dir"] != "host->bus":
            continue
        entry = [record["inst"], record["id"], record.get("register", "")]
        if record["inst"] == "WRITE":
            entry.append(record["value"])
        sequence.append(entry)
    return sequence


@pytest.mark.parametrize(
    ("bus", "make"),
    [
        ("left_follower", lambda port, d: SOFollower(SOFollowerRobotConfig(port=port, id="golden", calibration_dir=d))),
        ("right_leader", lambda port, d: SOLeader(SOLeaderTeleopConfig(port=port, id="golden", calibration_dir=d))),
    ],
)
def test_lerobot_lifecycle(rig, tmp_path, monkeypatch, bus, make):
    client = rig.client()
    person = ScriptedPerson(client, bus)
    monkeypatch.setattr("builtins.input", person.input)
    monkeypatch.setattr(motors_bus, "enter_pressed", person.enter_pressed)
    port = rig.ports[bus]

    # First connect: no calibration file, so LeRobot runs its first-time calibration.
    device = connect_with_retry(lambda: make(port, tmp_path))
    assert any("middle of its range" in p for p in person.prompts)
    assert device.is_calibrated
    saved = json.loads((tmp_path / "golden.json").read_text())
    pan = saved["shoulder_pan"]
    assert abs(abs(pan["homing_offset"]) - 1650) < 150  # values like a real SO-101's
    assert pan["range_max"] - pan["range_min"] > 2000
    assert (saved["wrist_roll"]["range_min"], saved["wrist_roll"]["range_max"]) == (0, 4095)

    # 100 read and write cycles.
    is_follower = isinstance(device, SOFollower)
    for i in range(100):
        state = device.get_observation() if is_follower else device.get_action()
        if is_follower:
            target = dict(state)
            target["shoulder_pan.pos"] = 10.0 if i < 50 else -10.0
            device.send_action(target)
        else:
            device.send_feedback(state)
    if is_follower:
        time.sleep(0.5)
        assert device.get_observation()["shoulder_pan.pos"] == pytest.approx(-10.0, abs=0.5)
    device.disconnect()
    assert not any(m["torque_enabled"] for m in client.state(bus))

    # Reconnect with a matching file: no prompt, no calibration, the same packets every time.
    def clear() -> None:
        person.prompts.clear()
        client.trace_clear()

    again = connect_with_retry(lambda: make(port, tmp_path), before_each=clear)
    sequence = instruction_sequence(client.trace(bus))
    assert person.prompts == []
    assert again.is_calibrated
    # The same count as a trace of the prototype emulator (the packets LeRobot's calibration sends).
    assert len(sequence) == (117 if is_follower else 84)
    again.disconnect()
    golden = GOLDEN / f"lerobot_{'follower' if is_follower else 'leader'}_reconnect.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":  # regenerate deliberately, then review the diff
        golden.write_text(json.dumps(sequence, indent=0))
    assert sequence == json.loads(golden.read_text())
    client.close()
