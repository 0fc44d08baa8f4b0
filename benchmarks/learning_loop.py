"""The learning loop on the virtual rig: our recordings train an ACT that is deployed and scored by truth.

    .venv/bin/python -m benchmarks.learning_loop --quick   # smoke: 3 demonstrations, 20 steps, 2 rollouts (~7 min)
    .venv/bin/python -m benchmarks.learning_loop           # make bench LONG=1: 50 demonstrations, 20 rollouts each
    .venv/bin/python -m benchmarks.learning_loop --reuse   # go on from the stages a cut-short run finished

Every step is the command a user runs, on the virtual rig with one small camera (the overhead one at
96x72, which sees where the cloth lies): ACT's ResNet-18 on three 480x640 frames takes ~1 s a step
on 2 cores, on three 80x64 ones 0.5 s; on the one camera ~0.35 s (2.85 steps a second measured),
so 5,000 steps fit 30 minutes.

    so101-record      --demonstrations episodes; the scripted operator does the task from where each
                      episode's cloth lies and fails at virtual.task_failure_rate (0.15)
    so101-review      --check=true: the pre-training check (exit 1 on errors)
    lerobot-train     ACT, stock, on the CPU, --steps steps (no pretrained backbone: nothing downloads)
    so101-deploy      the trained ACT for --rollouts rollouts, recorded; the table is tidied at a fresh
                      seeded cloth pose before each one and its truth saved in the card; the followers
                      are first ramped to where the demonstrations started (--start_pose=demonstrations)

Beside it, on the same cloth poses (every evaluation dataset has the same repo_id, which seeds them):
    blind             the mean demonstration, open loop: so101-record with virtual.operator_blind (the
                      operator's plan for the middle of the cloth's range, wherever it lies, never failing)
    demonstrations    the training episodes' own truth
    shifted           ACT trained the same way on a copy whose actions lag the observations by 3 frames
                      (tests/support/dataset_corruptions.py), deployed the same way (--corruption none skips)

Then a blind so101-campaign scored by truth between the trained ACT and one trained 5 % as long (the
stopping rule on, at most --campaign-max rollouts each), revealed by so101-report.

Output: the JSON (--out) with each group's R1-R3 and total means and 95 % intervals (the report's
t-interval), the report's interval coverage over resampled sets of episodes, the training curves,
each stage's seconds; a PNG of the curves and the scores beside it.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.learning_stats import CRITERIA, TOTAL, interval_coverage, summarise, training_curve, truth_scores
from benchmarks.rig_file import write_rig
from benchmarks.summary import Row
from policies.compiled.cpu import read_cpu
from tests.support.dataset_corruptions import Corruption, corrupted_copy

DEMO_REPO, EVAL_REPO = "bench/fold_demos", "bench/fold_eval"  # EVAL_REPO seeds every evaluation's cloth poses
BIN = Path(sys.executable).parent
TARGET_TOTAL = 1.5  # the bar: the trained ACT's mean total by truth, of 3


class Stages:
    """Runs each command, logs it under `logs/` and keeps its seconds; with `reuse`, a stage done before is skipped."""

    def __init__(self, work: Path, reuse: bool) -> None:
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.reuse = reuse
        self.seconds: dict[str, float] = {}
        self.reused: list[str] = []

    def fresh(self, name: str, output: Path) -> None:
        """Remove what a cut-short run of stage `name` left in `output`, unless the stage is to be reused."""
        if not (self.reuse and (self.logs / f"{name}.done").exists()):
            shutil.rmtree(output, ignore_errors=True)

    def run(self, name: str, *argv: str, ok: tuple[int, ...] = (0,)) -> str:
        log, marker = self.logs / f"{name}.log", self.logs / f"{name}.done"
        if self.reuse and marker.exists():
            self.seconds[name] = float(marker.read_text())
            self.reused.append(name)
            print(f"--- {name}: done before ({self.seconds[name]:.0f} s), reused", flush=True)
            return log.read_text()
        print(f"--- {name}: {' '.join(argv)[:300]}", flush=True)
        start = time.monotonic()
        with log.open("w") as out:
            done = subprocess.run([str(BIN / argv[0]), *argv[1:]], stdout=out, stderr=subprocess.STDOUT, check=False)
        self.seconds[name] = round(time.monotonic() - start, 1)
        text = log.read_text()
        if done.returncode not in ok:
            raise SystemExit(f"{name} failed (exit {done.returncode}); its log: {log}\n{text[-2000:]}")
        print(f"    {self.seconds[name]:.0f} s", flush=True)
        marker.write_text(str(self.seconds[name]))
        return text


def record(stages: Stages, name: str, rig: Path, repo: str, root: Path, episodes: int, episode_s: float) -> None:
    stages.fresh(name, root)
    stages.run(
        name,
        "so101-record",
        f"--config_path={rig}",
        f"--dataset.repo_id={repo}",
        f"--dataset.root={root}",
        "--dataset.vcodec=h264",
        f"--session.num_episodes={episodes}",
        f"--session.episode_s={episode_s}",
        "--session.reset_s=1",
    )


def train(
    stages: Stages, name: str, dataset: Path, out: Path, args: argparse.Namespace, steps: int | None = None
) -> list[dict[str, float]]:
    """Stock lerobot-train: a small ACT whose ResNet-18 learns from scratch (nothing is downloaded)."""
    steps = steps or args.steps
    log_freq = max(1, steps // 40)
    stages.fresh(name, out)
    text = stages.run(
        name,
        "lerobot-train",
        f"--dataset.repo_id={DEMO_REPO}",
        f"--dataset.root={dataset}",
        "--dataset.video_backend=pyav",
        "--policy.type=act",
        "--policy.device=cpu",
        "--policy.push_to_hub=false",
        "--policy.pretrained_backbone_weights=null",
        "--policy.dim_model=256",
        "--policy.n_heads=4",
        "--policy.dim_feedforward=1024",
        "--policy.n_encoder_layers=2",
        "--policy.n_decoder_layers=1",
        "--policy.chunk_size=30",
        "--policy.n_action_steps=30",
        f"--policy.optimizer_lr={args.lr}",
        f"--policy.optimizer_lr_backbone={args.lr}",  # the backbone starts from scratch: it must learn too
        f"--steps={steps}",
        f"--batch_size={args.batch_size}",
        "--num_workers=1",
        f"--save_freq={steps}",
        f"--log_freq={log_freq}",
        "--wandb.enable=false",
        f"--output_dir={out}",
    )
    return training_curve(text, log_freq)


def deploy(stages: Stages, name: str, rig: Path, checkpoint: Path, root: Path, args: argparse.Namespace) -> None:
    stages.fresh(name, root)
    stages.run(
        name,
        "so101-deploy",
        f"--config_path={rig}",
        f"--policy.path={checkpoint}",
        "--policy.device=cpu",
        f"--dataset.repo_id={EVAL_REPO}",
        f"--dataset.root={root}",
        "--dataset.vcodec=h264",
        f"--session.num_episodes={args.rollouts}",
        f"--session.episode_s={args.episode_s}",
        "--session.reset_s=1",
        "--start_pose=demonstrations",  # each rollout starts where the demonstrations did
    )


def run_campaign(stages: Stages, rig: Path, demos: Path, args: argparse.Namespace) -> dict[str, Any]:
    """so101-campaign, blind and scored by truth, between the trained ACT and one trained 5 % as long.

    The stopping rule looks after each round (min 5 episodes each); the reveal says who was ahead.
    """
    under_steps = max(1, args.steps // 20)
    train(stages, "train_under", demos, args.work / "train_under", args, steps=under_steps)
    trained, under = checkpoint_of(args.work / "train"), checkpoint_of(args.work / "train_under")
    root, report = args.work / "campaign", args.work / "campaign_report"
    stages.fresh("campaign", root)
    stages.run(
        "campaign",
        "so101-campaign",
        f"--policies=[{trained.resolve()},{under.resolve()}]",
        f"--campaign.root={root}",
        "--campaign.scorer=truth",
        "--campaign.stop_when_significant=true",
        f"--campaign.episodes_per_policy={args.campaign_max}",
        f"--campaign.max_episodes_per_policy={args.campaign_max}",
        f"--campaign.min_episodes_per_policy={min(5, args.campaign_max)}",
        "--campaign.seed=0",
        f"--deploy.config_path={rig}",
        f"--deploy.session.episode_s={args.episode_s}",
        "--deploy.session.reset_s=1",
        "--deploy.policy.device=cpu",
        "--deploy.start_pose=demonstrations",
    )
    stages.run("campaign_reveal", "so101-report", f"--campaign.root={root}", f"--output_dir={report}")
    reveal = json.loads((report / "campaign_reveal.json").read_text())
    manifest = json.loads((root / "campaign.json").read_text())
    label = next(p["label"] for p in reveal["policies"] if Path(p["checkpoint"]) == trained.resolve())
    pair = reveal["differences"][0]  # first minus second, with its Welch interval
    value = pair["difference"]["value"]
    ahead = None if value is None else value if label == pair["first"] else -value  # trained minus under-trained
    return {
        "under_trained_steps": under_steps,
        "outcome": manifest["outcome"],
        "episodes": manifest["episodes_done"],
        "trained_label": label,
        "trained_minus_under_trained": ahead,
        "difference": pair["difference"],
        "better_ahead": ahead is not None and ahead > 0,
    }


def checkpoint_of(training: Path) -> Path:
    return training / "checkpoints" / "last" / "pretrained_model"


def print_baselines(stages: Stages, blind_rig: Path, demos: Path, args: argparse.Namespace) -> None:
    """The demonstrations' truth beside the blind baseline's on as many fresh poses: what seeing is worth."""
    record(stages, "record_blind", blind_rig, EVAL_REPO, args.work / "eval_blind", args.rollouts, args.episode_s)
    groups = {"demonstrations": truth_scores(demos), "blind": truth_scores(args.work / "eval_blind")}
    for name, scores in groups.items():
        summary = summarise(scores)
        print(name, len(scores), {key: (value["value"], value["low"], value["high"]) for key, value in summary.items()})
    print("seconds per stage:", stages.seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demonstrations", type=int, default=50)
    parser.add_argument("--episode-s", type=float, default=17.0, help="each demonstration and rollout, seconds")
    parser.add_argument("--steps", type=int, default=5000, help="lerobot-train steps (each training)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--cameras", default="overhead", help="the rig's cameras: overhead,left_wrist,right_wrist")
    parser.add_argument("--camera-size", default="96x72", help="WIDTHxHEIGHT of every camera")
    parser.add_argument("--rollouts", type=int, default=20)
    parser.add_argument("--corruption", default=Corruption.ACTION_BEHIND.value, help="or 'none'")
    parser.add_argument("--campaign-max", type=int, default=20, help="the campaign's most rollouts per policy")
    parser.add_argument("--work", type=Path, default=Path("outputs/bench/learning_loop"))
    parser.add_argument("--reuse", action="store_true", help="keep --work and skip the stages it has done")
    parser.add_argument("--quick", action="store_true", help="3 demonstrations, 20 steps, 2 rollouts, no corruption")
    parser.add_argument(
        "--baselines-only",
        action="store_true",
        help="record the demonstrations and the blind baseline, print their truth, stop (does seeing pay?)",
    )
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/learning_loop.json"))
    args = parser.parse_args()
    if args.quick:
        args.demonstrations, args.steps, args.rollouts, args.corruption, args.campaign_max = 3, 20, 2, "none", 2
    width, height = (int(v) for v in args.camera_size.split("x"))
    cameras = args.cameras.split(",")
    if not args.reuse:
        shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    stages = Stages(args.work, args.reuse)
    rig = write_rig(args.work, "task", cameras, (width, height))
    blind_rig = write_rig(args.work, "blind", cameras, (width, height), operator_blind=True, task_failure_rate=0.0)
    demos = args.work / "demonstrations"

    record(stages, "record_demonstrations", rig, DEMO_REPO, demos, args.demonstrations, args.episode_s)
    if args.baselines_only:
        print_baselines(stages, blind_rig, demos, args)
        return
    stages.run("pre_training_check", "so101-review", f"--dataset.root={demos}", "--check=true")
    groups = {"demonstrations": truth_scores(demos)}
    curves = {"trained": train(stages, "train", demos, args.work / "train", args)}
    deploy(stages, "deploy_trained", rig, checkpoint_of(args.work / "train"), args.work / "eval_trained", args)
    groups["trained ACT"] = truth_scores(args.work / "eval_trained")
    record(stages, "record_blind", blind_rig, EVAL_REPO, args.work / "eval_blind", args.rollouts, args.episode_s)
    groups["blind (mean demonstration, open loop)"] = truth_scores(args.work / "eval_blind")
    if args.corruption != "none":
        broken = args.work / "demonstrations_broken"
        stages.fresh("pre_training_check_broken", broken)
        if not broken.exists():
            corrupted_copy(demos, broken, Corruption(args.corruption))
        # The check flags it (that is its job); training goes on regardless, to show what it would cost.
        stages.run("pre_training_check_broken", "so101-review", f"--dataset.root={broken}", "--check=true", ok=(0, 1))
        curves[args.corruption] = train(stages, "train_broken", broken, args.work / "train_broken", args)
        deploy(stages, "deploy_broken", rig, checkpoint_of(args.work / "train_broken"), args.work / "eval_broken", args)
        groups[f"ACT trained on {args.corruption}"] = truth_scores(args.work / "eval_broken")

    campaign = run_campaign(stages, rig, demos, args)

    summary = {name: summarise(scores) for name, scores in groups.items()}
    coverage = {n: interval_coverage(groups["demonstrations"], n) for n in (5, 10, 20)}
    trained, blind = summary["trained ACT"][TOTAL], summary["blind (mean demonstration, open loop)"][TOTAL]
    result = {
        "cpu": read_cpu().name,
        "cores": os.cpu_count(),
        "settings": {k: str(v) for k, v in vars(args).items()},
        "seconds": stages.seconds,
        "groups": summary,
        "scores": groups,
        "interval_coverage": coverage,
        "campaign": campaign,
        "reused_stages": stages.reused,
        "curves": curves,
        "target_met": bool(
            trained["value"] is not None
            and trained["value"] >= TARGET_TOTAL
            and trained["low"] is not None
            and blind["high"] is not None
            and trained["low"] > blind["high"]
        ),
        "summary": [
            Row(
                "learning_loop",
                "trained ACT: mean total by truth (0..3)",
                "",
                trained["value"],
                blind["value"],
                anchor_name="blind baseline (mean demonstration, open loop)",
                higher_is_better=True,
                target=f">= {TARGET_TOTAL}, 95 % interval above the blind one's",
            ).as_dict(),
            Row(
                "learning_loop",
                "report's 95 % interval covers the true mean (10 episodes, total)",
                "share",
                coverage[10][TOTAL],
                0.95,
                anchor_name="nominal",
                higher_is_better=True,
                target="about 0.95",
            ).as_dict(),
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    from benchmarks.learning_plot import plot

    plot(result, args.out.with_suffix(".png"))
    for name, criteria in summary.items():
        cells = "  ".join(f"{c} {criteria[c]['value']:.2f}" for c in (*CRITERIA, TOTAL))
        print(f"{name:45s} n={criteria[TOTAL]['n']:3d}  {cells}")
    print(f"wrote {args.out} and {args.out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
