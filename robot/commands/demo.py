"""so101-demo: the product on the virtual rig, step by step, with the commands a user would type.

    so101-demo                     # or: make demo
    so101-demo --output_dir=outputs/demo --teleop_s=10 --episodes=2 --episode_s=8

Each step runs a real console script (as a child process, exactly as you would) against four
emulated SO-101 arms: start the virtual rig, calibrate the arms through LeRobot's procedure,
run the preflight doctor, then teleoperate while the scripted operator demonstrates a cloth fold on
the leader arms: through so101-teleop (safety on), then recording two short demonstrations with
so101-record, then through LeRobot's own `lerobot-teleoperate`.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import draccus
from rich.console import Console
from rich.panel import Panel

from robot.config import DEFAULT_RIG_FILE
from robot.joints import ARM_NAMES
from robot.virtual.client import VirtualRigClient

BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class DemoConfig:
    """Options of so101-demo."""

    # Where the demo keeps its virtual rig, calibration files and logs (wiped at start)
    output_dir: Path = Path("outputs/demo")
    # Seconds of teleoperation (0 skips teleoperation and recording)
    teleop_s: float = 10.0
    # Demonstrations to record, and how long each one is, seconds
    episodes: int = 2
    episode_s: float = 8.0


class Demo:
    """Runs the steps and explains them."""

    def __init__(self, config: DemoConfig, console: Console) -> None:
        self.config = config
        self.console = console
        out = config.output_dir.resolve()
        self.out = out
        self.rig_args = [
            f"--config_path={DEFAULT_RIG_FILE}",
            f"--rig.virtual.runtime_dir={out / 'run'}",
            f"--rig.virtual.state_dir={out / 'motor_flash'}",
            f"--rig.calibration.dir={out / 'calibration'}",
        ]
        self.env = os.environ | {"HF_HUB_OFFLINE": "1"}
        self.step = 0
        self.dataset: Path | None = None

    def say(self, title: str, text: str) -> None:
        """Announce the next step."""
        self.step += 1
        self.console.print(Panel(text, title=f"step {self.step}: {title}", title_align="left"))

    def run(self, name: str, *args: str) -> None:
        """Run a console script as the user would; stop the demo if it fails."""
        command = [str(BIN / name), *args]
        pretty = " ".join(shlex.quote(a) for a in [name, *args])
        self.console.print(f"[dim]$ {pretty}[/dim]")
        result = subprocess.run(command, env=self.env)
        if result.returncode != 0:
            raise SystemExit(f"demo stopped: `{name}` exited with status {result.returncode}")

    def main(self) -> None:
        """Start the rig, run every step, stop the rig."""
        if self.out.exists():
            shutil.rmtree(self.out)
        (self.out / "run").mkdir(parents=True)
        self.say(
            "start the virtual rig",
            "Four emulated SO-101 arms (two followers, two leaders) on pseudo-terminals. Each motor is an\n"
            "STS3215 emulator speaking the real Feetech protocol with physics, so LeRobot's own driver code\n"
            "runs unchanged against it. The motors start factory-fresh: they need calibrating.",
        )
        sim_log = (self.out / "sim.log").open("w")
        sim = subprocess.Popen(
            [str(BIN / "so101-sim"), *self.rig_args, "--json=true"],
            stdout=subprocess.PIPE,
            stderr=sim_log,
            text=True,
            env=self.env,
        )
        try:
            line = sim.stdout.readline() if sim.stdout else ""
            ready = json.loads(line) if line else {}
            if not ready.get("ready"):
                raise SystemExit(f"demo stopped: the virtual rig did not start (see {self.out / 'sim.log'})")
            for arm in ARM_NAMES:
                self.console.print(f"  {arm:15} {ready['ports'][arm]}")
            self.console.print(f"  control socket  {ready['control']}")
            self._steps(Path(ready["control"]), ready["ports"])
        finally:
            sim.send_signal(2)
            sim.wait(timeout=15)
            sim_log.close()

    def _steps(self, control: Path, ports: dict[str, str]) -> None:
        self.say(
            "calibrate the four arms",
            "LeRobot's calibration procedure on each arm: the scripted operator holds the arm in its middle\n"
            "pose, then sweeps every joint through its range. Files land where LeRobot looks for them.",
        )
        self.run("so101-calibrate", *self.rig_args)
        self.say(
            "preflight with so101-doctor",
            "Ports, motors, calibration against the motors, supply voltage, temperatures, bus timing,\n"
            "disk and video encoder: will this session produce good data?",
        )
        self.run("so101-doctor", *self.rig_args, f"--dataset_root={self.out}")
        if self.config.teleop_s <= 0:
            return
        self.say(
            "teleoperation with safety on",
            f"The scripted operator folds a cloth with the leader arms; so101-teleop makes the followers\n"
            f"follow at 30 Hz for {self.config.teleop_s:.0f} s, through the safety layer (limits, step and\n"
            "speed caps, thermal watchdog, gripper relief when the jaws meet the cloth). At the end the\n"
            "followers go back to where they started and release torque.",
        )
        self.run("so101-teleop", *self.rig_args, f"--duration_s={self.config.teleop_s}")
        self.say(
            "record demonstrations into a LeRobot dataset",
            f"{self.config.episodes} short episodes of the cloth fold through so101-record. Each saved episode\n"
            "is durable at once and followed by its quality card; the dataset is what `lerobot-train`\n"
            "reads. Keys work over SSH: →/n next, ←/r re-record, space pause, q stop.",
        )
        dataset = self.out / "dataset"
        self.run(
            "so101-record",
            *self.rig_args,
            "--dataset.repo_id=demo/fold_cloth",
            f"--dataset.root={dataset}",
            "--dataset.vcodec=h264",
            f"--session.num_episodes={self.config.episodes}",
            f"--session.episode_s={self.config.episode_s}",
            "--session.reset_s=2",
        )
        self.dataset = dataset
        self.say(
            "LeRobot's own teleoperation on the virtual rig",
            "The same ports work with LeRobot's scripts, unmodified: `lerobot-teleoperate` for 5 s.",
        )
        calibration = self.out / "calibration"
        with VirtualRigClient(control) as client:
            client.play("cloth_fold", loop=True)
            self.run(
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
            )
            client.stop()


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-demo."""
    config = draccus.parse(DemoConfig, args=sys.argv[1:] if argv is None else argv)
    console = Console()
    start = time.monotonic()
    try:
        Demo(config, console).main()
    except SystemExit as e:
        console.print(f"[bold red]{e}[/]")
        return 1
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130
    console.print(
        Panel(
            f"Done in {time.monotonic() - start:.0f} s.\n"
            f"Calibration files: {config.output_dir / 'calibration'}\n"
            f"Dataset: {config.output_dir / 'dataset'} (quality cards in meta/so101/episodes/)\n"
            "Next: point hardware_configs/so101_bimanual.yaml at your arms and run so101-doctor on it.",
            title="demo finished",
            title_align="left",
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
