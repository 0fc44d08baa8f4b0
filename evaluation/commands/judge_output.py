"""What so101-judge prints: its console, the progress bar, the run's and the dry run's tables, plain lines."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from evaluation.judge.config import JudgeCommandConfig
from evaluation.judge.dry_run import DryRunReport
from evaluation.judge.run_context import EpisodeOutcome
from evaluation.judge.run_summary import RunSummary

console = Console(stderr=False)


class RichProgress:
    """Progress bar: episodes done, routed so far, cost from reported usage."""

    def __init__(self) -> None:
        """Create the (not yet started) bar."""
        self._progress = Progress(
            TextColumn("[bold]judging"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[note]}"),
            TimeElapsedColumn(),
            console=console,
        )
        self._task = None
        self._routed = 0
        self._cost = 0.0

    def start(self, total: int, skipped: int) -> None:
        """Show the bar (and how many episodes were skipped)."""
        if skipped:
            already = f"{skipped} episode(s) already scored under this configuration"
            console.print(f"{already}: skipped (use --run.force=true)")
        if total:
            self._progress.start()
            self._task = self._progress.add_task("judge", total=total, note="")

    def advance(self, outcome: EpisodeOutcome) -> None:
        """Advance by one episode."""
        self._routed += outcome.routed
        self._cost += outcome.cost_usd
        if self._task is not None:
            note = f"routed {self._routed}  ${self._cost:.3f}"
            self._progress.update(self._task, advance=1, note=note)

    def stop(self) -> None:
        """Remove the live display."""
        self._progress.stop()


def print_lines(lines: list[str]) -> None:
    """Print plain text (no markup, no highlighting, no wrapping)."""
    for line in lines:
        console.print(escape(line), highlight=False, soft_wrap=True)


def print_dry_run(report: DryRunReport, config: JudgeCommandConfig) -> None:
    """The dry run's table of episodes, its estimate and where its files are."""
    table = Table(title=f"dry run: {config.judge.model}, {config.judge.samples} samples per episode (no API call)")
    for col in ("episode", "images/call", "input tokens/call", "files"):
        table.add_column(col)
    for e in report.episodes:
        table.add_row(
            str(e.episode_index),
            str(e.images_per_call),
            f"{e.input_tokens_per_call:,}",
            str(e.files[0].parent) if e.files else "",
        )
    console.print(table)
    est = report.estimate
    cost = (
        "unknown (set judge.input_usd_per_mtok and judge.output_usd_per_mtok)" if est.usd is None else f"${est.usd:.2f}"
    )
    mode = "Message Batches (half price)" if est.batch else "synchronous, system prompt cached after the first call"
    console.print(
        f"{len(report.episodes)} episode(s) to judge, {report.skipped} already scored; {est.calls} calls, "
        f"{est.input_tokens:,} input + ~{est.output_tokens:,} output tokens; estimated cost {cost} ({mode})"
    )
    console.print(f"files: {report.output_dir} (contact sheets, prompt.md, request.json, estimate.json)")


def print_summary(summary: RunSummary, config: JudgeCommandConfig) -> None:
    """The run's table of episodes and its totals (or that there was nothing to judge)."""
    if summary.run_id is None:
        console.print("nothing to judge: every selected episode is already scored under this configuration")
        return
    table = Table(title=f"run {summary.run_id[:12]} ({config.scorer}, {summary.config_hash})")
    heuristic = config.scorer == "heuristic"
    for col in ("episode", "status", "scores", "total", "motion check", "review"):
        table.add_column(col)
    for o in sorted(summary.outcomes, key=lambda o: o.episode_index):
        scores = _scores_text(o.scores)
        motion = "did nothing" if o.did_nothing else ("" if heuristic else _scores_text(o.heuristic))
        review = "; ".join(o.reasons) if o.routed else ""
        table.add_row(
            str(o.episode_index),
            o.status if not o.failure_reason else f"failed: {o.failure_reason}",
            scores,
            "-" if o.total is None else f"{o.total:g}",
            motion,
            review,
        )
    console.print(table)
    if heuristic:
        console.print("[bold]heuristic scores[/bold]: joint motion and gripper events only; the cloth is not seen.")
    console.print(
        f"scored {summary.scored}, failed {summary.failed}, routed to review {summary.routed}, skipped "
        f"{summary.skipped}; {summary.calls} judge calls, {summary.requests} requests ({summary.retries} retries), "
        f"{summary.input_tokens:,} input and {summary.output_tokens:,} output tokens, ${summary.cost_usd:.4f} "
        "(from reported usage)"
    )


def _scores_text(scores: tuple[tuple[str, float | None], ...]) -> str:
    return " ".join(f"{c}={'-' if s is None else f'{s:g}'}" for c, s in scores)
