"""so101-demo: the whole product on the virtual rig, step by step, with the commands a user would type.

    so101-demo                     # or: make demo (about 4 minutes on 2 cores)
    so101-demo --output_dir=outputs/demo --episodes=3 --episode_s=8 --train_steps=30 --rollouts=2
    so101-demo --teleop_s=0 --lerobot_teleop=false --train_steps=2   # a quick pass through every step

Each step runs a real console script (a child process, exactly as you would type it) against four
emulated SO-101 arms and three synthetic cameras:

    so101-sim ─ so101-calibrate ─ so101-doctor ─ so101-teleop ─ so101-record ─ lerobot-teleoperate
        ─ so101-replay (dry run of a demonstration) ─ lerobot-train (a tiny ACT on the demonstrations)
        ─ so101-deploy (rollouts recorded as an evaluation dataset)
        ─ so101-judge (LLM judge when ANTHROPIC_API_KEY is set; else the labelled heuristic + a dry run)
        ─ so101-report (demonstrations versus the policy) ─ the so101-review command to open

The demo's rig is hardware_configs/virtual.yaml with the cameras at `camera_width` x `camera_height`
(320x240 by default, so recording, training and deploying fit a 2-core machine in minutes); its
rig file is written into the output folder, so every printed command can be pasted as it is.
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
import yaml
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from robot.config import DEFAULT_RIG_FILE
from robot.config_checks import non_finite_field
from robot.joints import ARM_NAMES
from robot.virtual.client import VirtualRigClient

BIN = Path(sys.executable).parent
DEMO_REPO_ID = "demo/fold_cloth"
EVAL_REPO_ID = "demo/eval_tiny_act"


@dataclass(frozen=True)
class DemoConfig:
    """Options of so101-demo."""

    # Where the demo keeps its virtual rig, calibration, datasets, reports and logs (wiped at start)
    output_dir: Path = Path("outputs/demo")
    # Seconds of teleoperation through so101-teleop (0 skips it)
    teleop_s: float = 6.0
    # Demonstrations to record, how long each one is and the reset between them, seconds
    episodes: int = 3
    episode_s: float = 8.0
    reset_s: float = 2.0
    # Also teleoperate through LeRobot's own lerobot-teleoperate for 5 s (shows the ports are LeRobot's)
    lerobot_teleop: bool = True
    # Training steps of the tiny ACT (lerobot-train, CPU): enough to show the plumbing, not to learn the task
    train_steps: int = 30
    # Policy rollouts to record with so101-deploy, and how long each one is, seconds
    rollouts: int = 2
    rollout_s: float = 6.0
    # The demo rig's camera size, pixels (the virtual rig's default is 640x480)
    camera_width: int = 320
    camera_height: int = 240

    def __post_init__(self) -> None:
        # SystemExit, like the checks below: main() prints its text as the demo's one-line error.
        bad = non_finite_field(self)
        if bad is not None:
            raise SystemExit(f"--{bad[0]}={bad[1]}: must be a finite number (not NaN or infinity)")
        for name in ("episodes", "train_steps", "rollouts"):
            if getattr(self, name) < 1:
                raise SystemExit(f"--{name}={getattr(self, name)}: must be at least 1")
        for name in ("episode_s", "rollout_s"):
            if not getattr(self, name) > 0:
                raise SystemExit(f"--{name}={getattr(self, name)}: must be more than 0 seconds")
        if self.teleop_s < 0 or self.reset_s < 0:
            raise SystemExit("--teleop_s and --reset_s must be 0 or more seconds")
        if not (32 <= self.camera_width <= 1920 and 32 <= self.camera_height <= 1080):
            raise SystemExit("--camera_width/--camera_height: expected 32..1920 x 32..1080 pixels")


@dataclass(frozen=True)
class DemoPaths:
    """Everything the demo writes, under one folder."""

    out: Path  # the demo's folder
    rig_file: Path  # the demo's rig YAML
    demonstrations: Path  # the recorded LeRobot dataset
    rollouts: Path  # the evaluation dataset so101-deploy records
    replay_report: Path  # so101-replay's report folder
    training: Path  # lerobot-train's output folder
    checkpoint: Path  # the trained policy, as lerobot-train saves it
    judge_dry_run: Path  # so101-judge --dry-run's contact sheet, prompt and estimate
    report: Path  # so101-report's folder
    logs: Path  # logs of the long-running tools

    @classmethod
    def under(cls, out: Path) -> "DemoPaths":
        """The demo's layout below `out`."""
        training = out / "train" / "tiny_act"
        return cls(
            out=out,
            rig_file=out / "rig.yaml",
            demonstrations=out / "datasets" / "fold_cloth",
            rollouts=out / "datasets" / "eval_tiny_act",
            replay_report=out / "replay",
            training=training,
            checkpoint=training / "checkpoints" / "last" / "pretrained_model",
            judge_dry_run=out / "judge_dry_run",
            report=out / "report",
            logs=out / "logs",
        )


def write_demo_rig(paths: DemoPaths, width: int, height: int) -> Path:
    """The virtual rig file with the demo's folders and camera size, for every command of the demo."""
    rig = yaml.safe_load(DEFAULT_RIG_FILE.read_text())
    rig["calibration"]["dir"] = str(paths.out / "calibration")
    rig["virtual"]["runtime_dir"] = str(paths.out / "run")
    rig["virtual"]["state_dir"] = str(paths.out / "motor_flash")
    for camera in rig["cameras"]:
        camera["width"], camera["height"] = width, height
    header = f"# Written by so101-demo: {DEFAULT_RIG_FILE.name} with the demo's folders and {width}x{height} cameras.\n"
    paths.rig_file.write_text(header + yaml.safe_dump(rig, sort_keys=False))
    return paths.rig_file


class Demo:
    """Runs the steps and explains them."""

    def __init__(self, config: DemoConfig, console: Console) -> None:
        self.config = config
        self.console = console
        self.paths = DemoPaths.under(config.output_dir.resolve())
        self.rig_args = [f"--config_path={self.paths.rig_file}"]
        self.env = os.environ | {"HF_HUB_OFFLINE": "1"}
        self.step = 0
        self.judged_with_llm = False

    def say(self, title: str, text: str) -> None:
        """Announce the next step."""
        self.step += 1
        self.console.print(Panel(text, title=f"step {self.step}: {title}", title_align="left"))

    def run(self, name: str, *args: str, log: str | None = None) -> None:
        """Run a console script as the user would; stop the demo if it fails.

        With `log`, the output goes to that file under logs/ (long tool logs); else to the terminal.
        """
        command = [str(BIN / name), *args]
        pretty = " ".join(shlex.quote(a) for a in [name, *args])
        self.console.print(f"[dim]$ {escape(pretty)}[/dim]")
        if log is None:
            result = subprocess.run(command, env=self.env)
        else:
            path = self.paths.logs / log
            with path.open("w") as stream:
                result = subprocess.run(command, env=self.env, stdout=stream, stderr=subprocess.STDOUT)
            self.console.print(f"  (output in {path})")
        if result.returncode != 0:
            where = f"; see {self.paths.logs / log}" if log else ""
            raise SystemExit(f"demo stopped: `{name}` exited with status {result.returncode}{where}")

    def main(self) -> None:
        """Start the rig, run every step, stop the rig."""
        out = self.paths.out
        if out.exists():
            shutil.rmtree(out)
        (out / "run").mkdir(parents=True)
        self.paths.logs.mkdir()
        write_demo_rig(self.paths, self.config.camera_width, self.config.camera_height)
        self.say(
            "start the virtual rig",
            "Four emulated SO-101 arms (two followers, two leaders) on pseudo-terminals. Each motor is an "
            "STS3215 emulator speaking the real Feetech protocol with physics, so LeRobot's own driver code "
            "runs unchanged against it. The motors start factory-fresh: they need calibrating. "
            f"Rig file: {self.paths.rig_file} (three synthetic cameras at "
            f"{self.config.camera_width}x{self.config.camera_height}).",
        )
        sim_log = (self.paths.logs / "sim.log").open("w")
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
                raise SystemExit(f"demo stopped: the virtual rig did not start (see {self.paths.logs / 'sim.log'})")
            for arm in ARM_NAMES:
                self.console.print(f"  {arm:15} {ready['ports'][arm]}")
            self.console.print(f"  control socket  {ready['control']}")
            self._hardware_steps(Path(ready["control"]), ready["ports"])
            self._policy_steps()
        finally:
            sim.send_signal(2)
            sim.wait(timeout=15)
            sim_log.close()
        self._evaluation_steps()

    def _hardware_steps(self, control: Path, ports: dict[str, str]) -> None:
        config = self.config
        self.say(
            "calibrate the four arms",
            "LeRobot's calibration procedure on each arm: the scripted operator holds the arm in its middle "
            "pose, then sweeps every joint through its range. Files land where LeRobot looks for them.",
        )
        self.run("so101-calibrate", *self.rig_args)
        self.say(
            "preflight with so101-doctor",
            "Ports, motors, calibration against the motors, supply voltage, temperatures, bus timing, "
            "cameras and their sync, disk and video encoder: will this session produce good data?",
        )
        self.run("so101-doctor", *self.rig_args, f"--dataset_root={self.paths.out}", "--vcodec=h264")
        if config.teleop_s > 0:
            self.say(
                "teleoperation with safety on",
                f"The scripted operator folds a cloth with the leader arms; so101-teleop makes the followers "
                f"follow at 30 Hz for {config.teleop_s:g} s, through the safety layer (limits, step and "
                "speed caps, thermal watchdog, gripper relief when the jaws meet the cloth). At the end the "
                "followers go back to where they started and release torque.",
            )
            self.run("so101-teleop", *self.rig_args, f"--duration_s={config.teleop_s}")
        self.say(
            "record demonstrations into a LeRobot dataset",
            f"{config.episodes} episodes of the cloth fold through so101-record. Each saved episode is "
            "durable at once (a crash loses only the episode in progress) and followed by its quality card; "
            "the dataset is what `lerobot-train` reads. Keys work over SSH: →/n next, ←/r re-record, "
            "space pause, q stop.",
        )
        self.run(
            "so101-record",
            *self.rig_args,
            f"--dataset.repo_id={DEMO_REPO_ID}",
            f"--dataset.root={self.paths.demonstrations}",
            "--dataset.vcodec=h264",
            f"--session.num_episodes={config.episodes}",
            f"--session.episode_s={config.episode_s}",
            f"--session.reset_s={config.reset_s}",
        )
        if config.lerobot_teleop:
            self._lerobot_teleop(control, ports)

    def _lerobot_teleop(self, control: Path, ports: dict[str, str]) -> None:
        self.say(
            "LeRobot's own teleoperation on the virtual rig",
            "The same ports work with LeRobot's scripts, unmodified: `lerobot-teleoperate` for 5 s.",
        )
        calibration = self.paths.out / "calibration"
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
                log="lerobot_teleoperate.log",
            )
            client.stop()

    def _policy_steps(self) -> None:
        config, paths = self.config, self.paths
        self.say(
            "dry-run a demonstration before it touches the arms",
            "so101-replay pushes episode 0's actions through the same control loop and safety layer on dry "
            "arms (every command checked and logged, nothing sent), as fast as possible, and writes a report: "
            "trajectories, limit hits and clamps with frame numbers, velocity/acceleration/jerk spikes, "
            "gripper events, and a sketch of the commanded pose beside the recorded overhead video.",
        )
        self.run(
            "so101-replay",
            *self.rig_args,
            f"--dataset.root={paths.demonstrations}",
            f"--dataset.repo_id={DEMO_REPO_ID}",
            "--dataset.episodes=0",
            "--report.stills=3",
            f"--report.dir={paths.replay_report}",
        )
        self.say(
            "train a tiny ACT with LeRobot",
            f"lerobot-train, unchanged, on the demonstrations: a small ACT (no pretrained backbone, chunk 30) "
            f"for {config.train_steps} steps on the CPU. Far too little to learn the fold; it makes a real "
            "LeRobot checkpoint for the next step. On your machine: train for ~100k steps on a GPU.",
        )
        self.run(
            "lerobot-train",
            f"--dataset.repo_id={DEMO_REPO_ID}",
            f"--dataset.root={paths.demonstrations}",
            "--dataset.video_backend=pyav",
            "--policy.type=act",
            "--policy.device=cpu",
            "--policy.push_to_hub=false",
            "--policy.pretrained_backbone_weights=null",
            "--policy.dim_model=64",
            "--policy.n_heads=2",
            "--policy.dim_feedforward=128",
            "--policy.n_encoder_layers=1",
            "--policy.n_decoder_layers=1",
            "--policy.n_vae_encoder_layers=1",
            "--policy.chunk_size=30",
            "--policy.n_action_steps=30",
            f"--steps={config.train_steps}",
            "--batch_size=4",
            "--num_workers=0",
            f"--save_freq={config.train_steps}",
            f"--log_freq={max(1, config.train_steps // 3)}",
            "--wandb.enable=false",
            f"--output_dir={paths.training}",
            log="lerobot_train.log",
        )
        self.say(
            "deploy the policy and record the rollouts",
            f"so101-deploy checks the checkpoint's cameras, image sizes and joints against the rig before any "
            f"weights load, then runs it at 30 Hz for {config.rollouts} rollout(s) of {config.rollout_s:g} s. "
            "The async engine computes the next chunk while the current one executes, so the loop never waits; "
            "the safety layer is on; every rollout is recorded as an evaluation dataset, with per-tick inference "
            "facts (chunk, latency, queue depth, starved ticks) kept beside it.",
        )
        self.run(
            "so101-deploy",
            *self.rig_args,
            f"--policy.path={paths.checkpoint}",
            "--policy.device=cpu",
            f"--dataset.repo_id={EVAL_REPO_ID}",
            f"--dataset.root={paths.rollouts}",
            "--dataset.vcodec=h264",
            f"--session.num_episodes={config.rollouts}",
            f"--session.episode_s={config.rollout_s}",
            f"--session.reset_s={config.reset_s}",
        )

    def _evaluation_steps(self) -> None:
        paths = self.paths
        with_key = bool(os.environ.get("ANTHROPIC_API_KEY"))
        if with_key:
            self.say(
                "judge every episode with Claude",
                "ANTHROPIC_API_KEY is set: so101-judge sends labelled keyframes of the three views (placed at "
                "gripper and motion events) with the cloth-fold rubric to the model, stores every call in SQLite "
                "beside each dataset, and routes unsure episodes to human review.",
            )
            for root in (paths.demonstrations, paths.rollouts):
                self.run("so101-judge", f"--dataset.root={root}")
            self.judged_with_llm = True
        else:
            self.say(
                "score every episode offline, and dry-run the LLM judge",
                "No ANTHROPIC_API_KEY: so101-judge --scorer=heuristic scores what the joint data can show "
                "(did the arms move, did the grippers close and open), stored and labelled as 'heuristic'. "
                "--dry-run then shows what the LLM judge would be sent: a contact sheet of the chosen frames, "
                "the exact prompt and a cost estimate, with no API call.",
            )
            for root in (paths.demonstrations, paths.rollouts):
                self.run("so101-judge", f"--dataset.root={root}", "--scorer=heuristic")
            self.run(
                "so101-judge",
                f"--dataset.root={paths.rollouts}",
                "--dry-run",
                f"--dry.output_dir={paths.judge_dry_run}",
                "--dry.sheets=1",
            )
        self.say(
            "compare the demonstrations with the policy",
            "so101-report: mean total reward with a small-sample interval, per-criterion means and success "
            "rates with Wilson intervals, the difference with a permutation test, a per-episode heatmap; "
            "one self-contained HTML page, PNG plots, Markdown and JSON.",
        )
        self.run(
            "so101-report",
            f"--datasets=[{paths.demonstrations},{paths.rollouts}]",
            "--names=[demonstrations,tiny ACT]",
            f"--output_dir={paths.report}",
            "--title=Demonstrations versus a tiny ACT (virtual rig)",
        )

    def summary(self, elapsed_s: float) -> str:
        """Where everything is, and what to run next."""
        paths = self.paths
        scorer = "the LLM judge" if self.judged_with_llm else "the heuristic scorer (no API key)"
        lines = [
            f"Done in {elapsed_s:.0f} s. Everything is under {paths.out}:",
            f"  rig file            {paths.rig_file}",
            f"  calibration         {paths.out / 'calibration'}",
            f"  demonstrations      {paths.demonstrations}  (LeRobot v3.0; quality cards in meta/so101/)",
            f"  dry-run report      {paths.replay_report / 'report.html'}",
            f"  tiny ACT checkpoint {paths.checkpoint}",
            f"  rollouts            {paths.rollouts}  (evaluation dataset; inference facts in meta/so101/)",
            f"  scores              {paths.rollouts.parent}/*.evaluation.sqlite  (by {scorer})",
        ]
        if not self.judged_with_llm:
            lines.append(f"  judge dry run       {paths.judge_dry_run}  (contact sheet, prompt, cost estimate)")
        lines += [
            f"  comparison report   {paths.report / 'report.html'}",
            f"  logs                {paths.logs}",
        ]
        return "\n".join(lines)

    def next_steps(self) -> str:
        """The commands to run next (printed outside the panel, so they paste as they are)."""
        return (
            "Review and override the scores in your browser (Ctrl-C stops the server):\n"
            f"  so101-review --dataset.root={self.paths.rollouts}\n"
            "Real arms: copy hardware_configs/so101_bimanual.yaml, put in your ports, run so101-doctor on it."
        )


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-demo."""
    console = Console()
    try:
        config = draccus.parse(DemoConfig, args=sys.argv[1:] if argv is None else argv)
    except SystemExit as e:
        if isinstance(e.code, str):
            console.print(f"[bold red]error:[/] {e.code}")
            return 2
        raise
    start = time.monotonic()
    demo = Demo(config, console)
    try:
        demo.main()
    except SystemExit as e:
        console.print(f"[bold red]{e}[/]")
        return 1
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130
    console.print(Panel(demo.summary(time.monotonic() - start), title="demo finished", title_align="left"))
    console.print(demo.next_steps(), soft_wrap=True, highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
