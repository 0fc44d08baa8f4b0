"""so101-demo's steps on the arms: the virtual rig, calibration, preflight, teleoperation, recording.

    start the virtual rig (so101-sim, a child process) -> so101-calibrate -> so101-doctor
        -> so101-teleop (unless --teleop_s=0) -> so101-record -> lerobot-teleoperate (unless turned off)

The rig stays up (`virtual_rig`) for these steps and the policy steps after them.
"""

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from policies.demo.layout import DEMO_REPO_ID, MARKER, check_output_dir, write_demo_rig
from policies.demo.runner import BIN, StepRunner
from robot.joints import ARM_NAMES
from robot.virtual.client import VirtualRigClient


@dataclass(frozen=True)
class RunningRig:
    """The virtual rig so101-sim started, as its ready line describes it."""

    control: Path  # its control socket
    ports: dict[str, str]  # arm name -> pseudo-terminal


def prepare_folder(runner: StepRunner) -> None:
    """Wipe the demo's folder (one it made, or an empty one: `check_output_dir`) and write its rig file there."""
    out = runner.paths.out
    check_output_dir(out)
    if out.exists():
        shutil.rmtree(out)
    (out / "run").mkdir(parents=True)
    (out / MARKER).write_text("so101-demo's folder: emptied by every run of so101-demo with this --output_dir\n")
    runner.paths.logs.mkdir()
    config = runner.config
    write_demo_rig(runner.paths, config.camera_width, config.camera_height, factory_new=config.from_the_box)


@contextmanager
def virtual_rig(runner: StepRunner) -> Iterator[RunningRig]:
    """Start so101-sim on the demo's rig file, for the steps inside; stop it (Ctrl-C's signal) after them.

    Raises:
        SystemExit: the rig did not say it was ready (its log is named).
    """
    config, paths = runner.config, runner.paths
    runner.say(
        "start the virtual rig",
        "Four emulated SO-101 arms (two followers, two leaders) on pseudo-terminals. Each motor is an "
        "STS3215 emulator speaking the real Feetech protocol with physics, so LeRobot's own driver code "
        "runs unchanged against it. The motors start factory-fresh: they need calibrating. "
        f"Rig file: {paths.rig_file} (three synthetic cameras at "
        f"{config.camera_width}x{config.camera_height}).",
    )
    sim_log = (paths.logs / "sim.log").open("w")
    sim = subprocess.Popen(
        [str(BIN / "so101-sim"), *runner.rig_args, "--json=true"],
        stdout=subprocess.PIPE,
        stderr=sim_log,
        text=True,
        env=runner.env,
    )
    try:
        line = sim.stdout.readline() if sim.stdout else ""
        ready = json.loads(line) if line else {}
        if not ready.get("ready"):
            raise SystemExit(f"demo stopped: the virtual rig did not start (see {paths.logs / 'sim.log'})")
        for arm in ARM_NAMES:
            runner.console.print(f"  {arm:15} {ready['ports'][arm]}")
        runner.console.print(f"  control socket  {ready['control']}")
        yield RunningRig(Path(ready["control"]), ready["ports"])
    finally:
        sim.send_signal(2)
        sim.wait(timeout=15)
        sim_log.close()


def box_steps(runner: StepRunner) -> None:
    """Brand-new arms (`--from_the_box=true`): find each arm's port, then give every motor its id."""
    runner.say(
        "find which USB port is which arm",
        "Out of the box the four adapters are unplugged and, once plugged in, get anonymous ttyACM<n> names. "
        "so101-ports asks for each arm's cable in turn (the virtual rig's hands plug it in) and the port "
        "that appeared is that arm's; the ports are written into the rig file.",
    )
    runner.run("so101-ports", *runner.rig_args, "--write=true")
    runner.say(
        "give every motor its id",
        "Every new STS3215 answers as id 1, so the arm's handshake fails. so101-setup asks for one motor at "
        "a time on the cable (gripper first), checks exactly one answers, and gives it its id at 1 Mbps "
        "with LeRobot's setup_motor; then it checks the assembled chain answers as ids 1-6.",
    )
    runner.run("so101-setup", *runner.rig_args)


def hardware_steps(runner: StepRunner, rig: RunningRig) -> None:
    """Calibrate, preflight, teleoperate and record demonstrations on the running rig."""
    config, paths = runner.config, runner.paths
    if config.from_the_box:
        box_steps(runner)
    runner.say(
        "calibrate the four arms",
        "LeRobot's calibration procedure on each arm: the scripted operator holds the arm in its middle "
        "pose, then sweeps every joint through its range. Files land where LeRobot looks for them.",
    )
    runner.run("so101-calibrate", *runner.rig_args)
    runner.say(
        "preflight with so101-doctor",
        "Ports, motors, calibration against the motors, supply voltage, temperatures, bus timing, "
        "cameras and their sync, disk and video encoder: will this session produce good data?",
    )
    runner.run("so101-doctor", *runner.rig_args, f"--dataset.root={paths.out}", "--dataset.vcodec=h264")
    if config.teleop_s > 0:
        runner.say(
            "teleoperation with safety on",
            f"The scripted operator folds a cloth with the leader arms; so101-teleop makes the followers "
            f"follow at 30 Hz for {config.teleop_s:g} s, through the safety layer (limits, step and "
            "speed caps, thermal watchdog, gripper relief when the jaws meet the cloth). At the end the "
            "followers go back to where they started and release torque.",
        )
        runner.run("so101-teleop", *runner.rig_args, f"--duration_s={config.teleop_s}")
    runner.say(
        "record demonstrations into a LeRobot dataset",
        f"{config.num_episodes} episodes of the cloth fold through so101-record. Each saved episode is "
        "durable at once (a crash loses only the episode in progress) and followed by its quality card; "
        "the dataset is what `lerobot-train` reads. Keys work over SSH: →/n next, ←/r re-record, "
        "space pause, q stop.",
    )
    runner.run(
        "so101-record",
        *runner.rig_args,
        f"--dataset.repo_id={DEMO_REPO_ID}",
        f"--dataset.root={paths.demonstrations}",
        "--dataset.vcodec=h264",
        f"--session.num_episodes={config.num_episodes}",
        f"--session.episode_s={config.episode_s}",
        f"--session.reset_s={config.reset_s}",
    )
    if config.lerobot_teleop:
        lerobot_teleop(runner, rig)


def lerobot_teleop(runner: StepRunner, rig: RunningRig) -> None:
    """LeRobot's own lerobot-teleoperate on the rig's ports for 5 s, the scripted operator playing."""
    runner.say(
        "LeRobot's own teleoperation on the virtual rig",
        "The same ports work with LeRobot's scripts, unmodified: `lerobot-teleoperate` for 5 s.",
    )
    calibration = runner.paths.out / "calibration"
    ports = rig.ports
    with VirtualRigClient(rig.control) as client:
        client.play("cloth_fold", loop=True)
        runner.run(
            "lerobot-teleoperate",
            "--robot.type=bi_so_follower",
            "--robot.id=virtual_bimanual",
            f"--robot.calibration_dir={calibration / 'robots' / 'so_follower'}",
            f"--robot.left_arm_config.port={ports['left_follower']}",
            f"--robot.right_arm_config.port={ports['right_follower']}",
            "--teleop.type=bi_so_leader",
            "--teleop.id=virtual_bimanual",
            f"--teleop.calibration_dir={calibration / 'teleoperators' / 'so_leader'}",
            f"--teleop.left_arm_config.port={ports['left_leader']}",
            f"--teleop.right_arm_config.port={ports['right_leader']}",
            "--fps=30",
            "--teleop_time_s=5",
            log="lerobot_teleoperate.log",
        )
        client.stop()
