"""so101-judge: batch-score recorded episodes with an LLM judge (Claude) against a rubric.

Each episode gets K judge samples with perturbed keyframes (events in the joint data, three views),
aggregated by median with an agreement figure, a motion heuristic beside it, and a routing decision
for human review. Everything lands in an append-only SQLite store beside the dataset; episodes
already scored under the same configuration are skipped, so an interrupted run resumes.

Examples:
    # See the frames, the exact prompt and the cost estimate; no API call, no key needed:
    so101-judge --dataset.root=outputs/datasets/fold_smolvla --dry_run=true

    # Judge every episode not yet scored under this configuration (needs ANTHROPIC_API_KEY):
    so101-judge --dataset.root=outputs/datasets/fold_smolvla --run.tag=smolvla-v2

    # Offline, no key: the motion heuristic (motion evidence only, stored as scorer "heuristic"), or, for a
    # recording of the virtual rig, each episode's ground truth from its quality card (scorer "truth"):
    so101-judge --dataset.root=outputs/datasets/fold_smolvla --scorer=heuristic
    so101-judge --dataset.root=outputs/datasets/fold_virtual --scorer=truth

    # Large job at half price through Message Batches, three samples, a config file plus overrides:
    so101-judge --options_path=judge.yaml --run.use_message_batches=true --judge.samples=3

    # Judge again under the same configuration (a new run; old records stay), then export:
    so101-judge --dataset.root=outputs/datasets/fold_act --run.force=true --export.csv_path=act_scores.csv

Cost: a run refuses to start when its estimate exceeds --run.max_estimated_cost_usd (default $10; the
refusal prints the command with a limit that fits). A model whose price is unknown is refused too:
give its price (--judge.input_usd_per_mtok, --judge.output_usd_per_mtok), or run it without a cost
limit with --run.allow_unknown_price=true.

Overload: after --run.pause_after_overloads (default 20) overloaded replies in a row (HTTP 529 or 503)
across all workers, the run pauses: no new request starts, scored episodes are kept, and the command
prints the command that resumes the rest.

Virtual ground truth stays continuous (0..1), a reference beside the judge's and people's scores.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path

from rich.logging import RichHandler
from rich.markup import escape

from evaluation.carry import carry_scores
from evaluation.commands.judge_output import RichProgress, console, print_dry_run, print_lines, print_summary
from evaluation.episode_source import DatasetSource, open_dataset
from evaluation.errors import ConfigError, DatasetReadError, MissingApiKeyError
from evaluation.export import export_scores
from evaluation.judge.command_line import CommandLine
from evaluation.judge.config import JudgeCommandConfig, judgment_hash
from evaluation.judge.dry_run import dry_run
from evaluation.judge.live_start import start_live
from evaluation.judge.run import run_judge, select_pending
from evaluation.judge.run_summary import RunSummary
from evaluation.judge.truth_run import TruthCards, read_truth, store_truth
from evaluation.judge.video_check import video_problem
from evaluation.live_labels import import_live_scores
from evaluation.rubric import Rubric, load_rubric
from evaluation.store import EvaluationStore, default_store_path
from evaluation.view_map import view_map
from evaluation.vocabulary import TRUTH_LABEL
from robot.shell.exit_codes import Exit, stopped_by
from robot.shell.old_spellings import renamed
from robot.shell.parse import parse_options
from robot.shell.run import run_body

PROGRAM = "so101-judge"
OLD_SPELLINGS = {"--dry-run": "--dry_run=true", "--force": "--run.force=true"}  # until the next release

EXAMPLE = "so101-judge --dataset.root=<dataset>"  # a command line that needs no config file

# Calibration of the judge and its heuristic, rarely changed from the command line: one line each in --help.
TUNING = {
    "judge.retry": "how transient API failures are retried",
    "frames": "how many frames the judge sees, and how repeated samples perturb them",
    "events": "thresholds for finding events (grasps, releases, motion) in the recorded signals",
    "motion": "thresholds of the heuristic motion check",
    "routing": "when an episode goes to human review",
}


def main(argv: list[str] | None = None) -> int:
    """Run so101-judge; returns the exit code."""
    argv = renamed(sys.argv[1:] if argv is None else argv, OLD_SPELLINGS)
    logging.basicConfig(
        level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=console, show_path=False)]
    )

    def body() -> int:
        config = parse_options(JudgeCommandConfig, argv, doc=__doc__, example=EXAMPLE, collapsed=TUNING)
        return _run(config, CommandLine(PROGRAM, tuple(argv)))

    resume = "interrupted: run the same command again to resume (scored episodes are kept)"
    return run_body(body, stopped=lambda _: resume)[0]


def _run(config: JudgeCommandConfig, command: CommandLine) -> int:
    """Open the rubric and the dataset, then do what the options ask: export, a dry run, truth, or judge."""
    rubric = load_rubric(config.rubric_path)
    source = _open_source(config, command)
    store_path = config.store_path or default_store_path(source.root)
    if config.export.only:
        with EvaluationStore(store_path) as store:
            _export(config, store)
        return Exit.DONE
    cards = read_truth(source, rubric, config, command) if config.scorer == "truth" else None  # refuses first
    if config.dry_run:
        return _dry_run(config, rubric, source, store_path) if cards is None else _dry_run_truth(cards)
    api_key = _api_key(config, command)
    _introduce(config, rubric, source, store_path)
    with EvaluationStore(store_path) as store:
        if cards is not None:
            return _store_truth(cards, config, rubric, source, store)
        summary = _judge(config, rubric, source, store, api_key, command)
    return _ending(summary, config, command)


def _open_source(config: JudgeCommandConfig, command: CommandLine) -> DatasetSource:
    root = config.dataset.root
    if root is None:  # also checked when the configuration is parsed
        raise ConfigError("dataset.root is required: pass --dataset.root=<LeRobot dataset folder>")
    source = open_dataset(root, config.dataset.dataset_id or None, view_map(config.dataset.views))
    if config.scorer == "llm" and not config.export.only and (problem := video_problem(source, command)):
        raise DatasetReadError(problem)
    return source


def _api_key(config: JudgeCommandConfig, command: CommandLine) -> str | None:
    """The API key the LLM judge needs (None for the offline scorers)."""
    if config.scorer != "llm":
        return None
    key = os.environ.get(config.judge.api_key_env)
    if not key:
        raise MissingApiKeyError(
            f"{config.judge.api_key_env} is not set, so the LLM judge cannot be called. Next: set it "
            f"(export {config.judge.api_key_env}=...), or see the chosen frames, the exact prompt and the cost "
            f"without calling anything: {command.with_args('--dry_run=true')}; or score offline with the "
            f"motion heuristic (joint motion only, stored as scorer 'heuristic'): "
            f"{command.with_args('--scorer=heuristic')}"
        )
    return key


def _introduce(config: JudgeCommandConfig, rubric: Rubric, source: DatasetSource, store_path: Path) -> None:
    """Say what is judged where; bring over the scores of carried episodes and the live labels."""
    console.print(
        f"dataset {source.root} ({len(source.episodes)} episodes), rubric {rubric.version}, store {store_path}"
    )
    print_lines(carry_scores(source, store_path).lines())
    print_lines(import_live_scores(source, store_path, rubric.criterion_ids).lines())


def _dry_run(config: JudgeCommandConfig, rubric: Rubric, source: DatasetSource, store_path: Path) -> int:
    store = EvaluationStore(store_path) if store_path.exists() else EvaluationStore(Path(":memory:"))
    with store:
        pending, skipped = select_pending(source, config, store, judgment_hash(config, rubric))
    out = config.dry.output_dir or store_path.parent / f"{source.root.name}.judge-dry-run"
    print_dry_run(dry_run(source, rubric, config, pending, skipped, out), config)
    return Exit.DONE


def _dry_run_truth(cards: TruthCards) -> int:
    """What --scorer=truth would store."""
    found = [f"episode {ep.index}: would store its {TRUTH_LABEL}" for ep, _ in cards.found]
    print_lines([*found, *cards.lines(), "dry run: nothing was stored"])
    return Exit.DONE


def _store_truth(
    cards: TruthCards, config: JudgeCommandConfig, rubric: Rubric, source: DatasetSource, store: EvaluationStore
) -> int:
    truth = store_truth(cards, source, rubric, config, store)
    print_lines(truth.lines())
    _export(config, store)
    return Exit.DONE if truth.complete else Exit.PARTIAL


def _judge(
    config: JudgeCommandConfig,
    rubric: Rubric,
    source: DatasetSource,
    store: EvaluationStore,
    api_key: str | None,
    command: CommandLine,
) -> RunSummary:
    """Judge (with the LLM when there is a key, else offline), then print the summary and export."""
    client = None
    if api_key:
        live = start_live(source, rubric, config, store, api_key, command)
        client = live.client
        console.print(live.estimate_line)
    progress = RichProgress()
    try:
        summary = run_judge(source, rubric, config, store, client, progress)
    finally:
        progress.stop()
    print_summary(summary, config)
    _export(config, store)
    return summary


def _ending(summary: RunSummary, config: JudgeCommandConfig, command: CommandLine) -> int:
    """The exit code of a run; a paused or interrupted one prints the command that resumes it."""
    resume = escape(resume_command(summary, config, command))
    if summary.paused:
        console.print(
            f"[yellow]paused[/yellow]: the API is overloaded: {escape(summary.paused)}; no new requests were sent. "
            f"Scored episodes are kept; in a few minutes, resume with: {resume}",
            highlight=False,
            soft_wrap=True,
        )
        return Exit.PAUSED
    if summary.interrupted:
        console.print(
            f"[yellow]interrupted[/yellow]: scored episodes are kept; resume with: {resume}",
            highlight=False,
            soft_wrap=True,
        )
        return stopped_by(signal.SIGINT)
    return Exit.PARTIAL if summary.failed else Exit.DONE


def resume_command(summary: RunSummary, config: JudgeCommandConfig, command: CommandLine) -> str:
    """The command that judges what this run left unfinished (and nothing it finished).

    Unforced, that is the same command: scored episodes are skipped. A forced run judges every episode
    again, so its resume names the unfinished episodes.
    """
    if not config.run.force:
        return command.with_args()
    return command.with_args(f"--dataset.episodes=[{','.join(str(i) for i in summary.unfinished)}]")


def _export(config: JudgeCommandConfig, store: EvaluationStore) -> None:
    for path in (config.export.csv_path, config.export.parquet_path):
        if path is not None:
            rows = export_scores(store, path)
            console.print(f"exported {rows} score rows to {path}")


if __name__ == "__main__":
    sys.exit(main())
