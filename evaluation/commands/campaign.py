r"""so101-campaign: compare checkpoints blind on one rig, in a balanced seeded order, scored live by the operator.

Each checkpoint gets a blind label (policy A, policy B, ...) drawn with the seed, so the order you type
them in says nothing. The campaign runs rounds of blocks, ABBA or BAAB for two policies (mirrored
Latin-square rows for more), one so101-deploy per block in this terminal: its status line and keys,
"policy A" on screen and never a checkpoint, and after each rollout the operator scores the rubric's
criteria with the keys. Episodes land in <campaign>/policy_A, ...; campaign.json holds the order, the
progress and the mapping (reading it unblinds you). Nothing printed here names a checkpoint or shows
a score. so101-report --campaign.root=<folder> reveals the mapping, with the difference in mean total
score (sum of the criteria per episode) and its 95 % interval.

Examples:
    so101-campaign --policies=[outputs/act/pretrained_model,outputs/smolvla/pretrained_model] \\
        --campaign.root=outputs/campaigns/fold --live_scores.operator=ana --campaign.episodes_per_policy=10

    # Stop early once the difference is clear (two policies only), at most 20 episodes each, on the arms:
    so101-campaign --policies=[<checkpoint>,<checkpoint>] --campaign.root=outputs/campaigns/fold \\
        --live_scores.operator=ana \\
        --campaign.stop_when_significant=true --campaign.max_episodes_per_policy=20 \\
        --deploy.config_path=hardware_configs/so101_bimanual.yaml --deploy.session.episode_s=40

    # Resume after q, Ctrl-C or a failed block: the same folder, same order, no checkpoints to type:
    so101-campaign --campaign.root=outputs/campaigns/fold --live_scores.operator=ana

    # On the virtual rig, unattended: each rollout scored by the cloth's ground truth, nobody at the keys:
    so101-campaign --policies=[<checkpoint>,<checkpoint>] --campaign.root=outputs/campaigns/virtual \\
        --campaign.scorer=truth --campaign.stop_when_significant=true --campaign.max_episodes_per_policy=20

Stopping rule: after each whole round (equal episodes per policy), once each has
--campaign.min_episodes_per_policy scored episodes, the campaign stops if the Welch interval of the
difference in mean total excludes 0; else it runs to the maximum. Looking after every round inflates
the false-stop rate (each look is another chance for noise to cross 0), so each look uses a Bonferroni
split: with L planned looks, a (1 - 0.05/L) interval (conservative; --campaign.adjust_for_looks=false
uses 95 % at every look and accepts the inflation).

so101-deploy gets --deploy.* (its --config_path, --session.episode_s, --session.reset_s, --engine.kind,
--policy.device); anything else goes in the rig file. A campaign paused by the operator exits 0, one
whose block failed 1: both print the command that resumes it.
"""

from __future__ import annotations

import logging
import shlex
import signal
import sys

from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape

from evaluation.campaign.config import CampaignCommandConfig
from evaluation.campaign.deploy_call import run_deploy
from evaluation.campaign.manifest import Manifest, Status
from evaluation.campaign.run import CampaignRun, run_campaign, stopping_rule
from evaluation.campaign.setup import check_checkpoints, open_campaign
from evaluation.errors import EvaluationError
from robot.shell.exit_codes import SIGNAL_BASE, Exit, stopped_by
from robot.shell.old_spellings import OPTIONS_FILE, renamed
from robot.shell.parse import parse_options
from robot.shell.run import run_body
from robot.shell.say import say, say_error

PROGRAM = "so101-campaign"
EXAMPLE = "so101-campaign --policies=[<checkpoint>,<checkpoint>] --campaign.root=<folder> --live_scores.operator=<name>"
console = Console(stderr=False)


def main(argv: list[str] | None = None) -> int:
    """Run so101-campaign; returns the exit code."""
    argv = renamed(sys.argv[1:] if argv is None else argv, OPTIONS_FILE)  # the resume repeats it
    logging.basicConfig(
        level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=console, show_path=False)]
    )

    def body() -> int:
        config = parse_options(CampaignCommandConfig, argv, doc=__doc__, example=EXAMPLE)
        manifest, created = open_campaign(config, {a.split("=", 1)[0] for a in argv})
        if not created:
            check_checkpoints(manifest)
        if manifest.status == Status.FINISHED:
            _say(f"campaign {manifest.name} is finished ({manifest.outcome}). Next: {_report(config)}")
            return Exit.DONE
        return _run(config, manifest, created, config.deploy.command(), _resume_command(argv))

    return run_body(body)[0]


def _run(config: CampaignCommandConfig, manifest: Manifest, created: bool, program: list[str], resume: str) -> int:
    _introduce(manifest, created)
    flags = config.deploy.flags()
    try:
        run = run_campaign(
            config.campaign.root,
            manifest,
            config.live_scores.operator,
            lambda call: run_deploy([*program, *call.args(), *flags]),
            _say,
        )
    except EvaluationError as e:
        say_error(f"{e} Episodes saved so far are kept; resume with: {resume}")
        return Exit.FAILED
    except KeyboardInterrupt:
        say(f"interrupted: episodes saved so far are kept; resume with: {resume}")
        return stopped_by(signal.SIGINT)
    return _ending(run, resume, config)


def _resume_command(argv: list[str]) -> str:
    """The command as typed, without --policies: campaign.json has them, and printing them would unblind."""
    kept, skip = [], False
    for arg in argv:
        if not skip and not arg.startswith("--policies"):
            kept.append(arg)
        skip = arg == "--policies"  # `--policies [a,b]`: its value is the next word
    return shlex.join([PROGRAM, *kept])


def _introduce(manifest: Manifest, created: bool) -> None:
    labels = ", ".join(f"policy {label}" for label in manifest.labels)
    planned = sum(r.episodes(manifest.labels[0]) for r in manifest.rounds)
    rule = "off"
    if manifest.stop_when_significant:
        r = stopping_rule(manifest)
        rule = f"stop once the difference's {r.confidence * 100:.4g} % interval excludes 0 ({r.planned_looks} looks)"
    _say(
        f"{'new' if created else 'resuming'} campaign {manifest.name}: {labels} (blind: campaign.json holds the "
        f"mapping), {len(manifest.rounds)} rounds, up to {planned} episodes each in blocks of {manifest.block}, "
        f"scored on {', '.join(manifest.criteria)}; stopping rule: {rule}"
    )


def _ending(run: CampaignRun, resume: str, config: CampaignCommandConfig) -> int:
    if run.failed is not None:
        code = 128 + run.failed.signal if run.failed.signal is not None else run.failed.code
        what = f"signal {run.failed.signal} arrived" if run.failed.signal is not None else f"exited with {code}"
        say_error(
            f"so101-deploy {what} during a block (what it said is above); the episodes it saved "
            f"are kept. Next: fix that, then resume: {resume}"
        )
        return code if code >= SIGNAL_BASE else Exit.FAILED
    if run.paused:
        _say(f"[yellow]paused[/yellow]: {run.paused} (q?); the order is kept. Resume with: {escape(resume)}")
        return Exit.DONE
    _say(f"campaign finished ({run.manifest.outcome}). Next: {_report(config)}")
    return Exit.DONE


def _report(config: CampaignCommandConfig) -> str:
    return f"so101-report --campaign.root={config.campaign.root}  # reveals which checkpoint is which"


def _say(text: str) -> None:
    console.print(text, highlight=False, soft_wrap=True)


if __name__ == "__main__":
    sys.exit(main())
