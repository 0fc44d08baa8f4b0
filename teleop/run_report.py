"""What a recording run prints: the dataset it opened, each episode's quality card, what it saved."""

from pathlib import Path

from rich.table import Table

from teleop.dataset.results import OpenReport
from teleop.quality import QualityCard
from teleop.session import RecordingSession


def describe_open(repo_id: str, report: OpenReport) -> str:
    """One line on what opening the dataset found (and repaired)."""
    if report.created:
        line = f"new dataset {repo_id} at {report.root}"
    else:
        line = f"dataset {repo_id} at {report.root}: {report.episodes} episodes ({report.frames} frames) so far"
    repair = report.repair
    if repair.rolled_back_episode is not None:
        line += f"; an interrupted save of episode {repair.rolled_back_episode} was rolled back"
    if repair.removed:
        line += f"; removed {len(repair.removed)} leftover file(s) of an interrupted run"
    return line


def describe_saves(session: RecordingSession, before: int, folder: Path, noun: str = "episode") -> list[str]:
    """The summary's lines on what this run saved: each episode not saved, then the durable count.

    `before`: episodes the dataset held when it was opened (a resumed one's). The count is that of
    saves that returned, so `before` + it is what LeRobotDataset loads from `folder`.
    """
    lines = [f"{noun} {unsaved.index} is NOT saved: {unsaved.reason}" for unsaved in session.unsaved]
    line = f"{session.recorded} {noun}(s) saved to {folder} in this run"
    if before:
        line += f"; with the {before} from before, the dataset holds {before + session.recorded}"
    return [*lines, line]


def card_table(cards: list[QualityCard]) -> Table:
    """The quality cards as a table."""
    table = Table(title="episode quality")
    columns = ("ep", "frames", "Hz", "jitter p99 ms", "skew p99 ms", "lost", "idle", "limits", "°C", "verdict")
    for column in columns:
        table.add_column(column)
    for c in cards:
        dropped = sum(c.dropped_frames.values()) + c.writer_dropped
        verdict = c.verdict if not c.failed_gates else f"{c.verdict}: {'; '.join(c.failed_gates)}"
        table.add_row(
            str(c.episode),
            str(c.frames),
            f"{c.achieved_fps:.2f}",
            f"{c.period_error_p99_ms:.2f}",
            "-" if c.skew_p99_ms is None else f"{c.skew_p99_ms:.1f}",
            str(dropped),
            f"{c.idle_fraction:.0%}",
            str(c.limit_hits),
            f"{c.peak_temperature_c:.0f}",
            verdict,
        )
    return table
