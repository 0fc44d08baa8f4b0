"""What a recording run prints: the dataset it opened, each episode's quality card, what it saved, what next."""

import shlex
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


def train_next_step(repo_id: str, folder: Path) -> str:
    """The lerobot-train command line for a recorded dataset (the user adds the policy and the rest)."""
    return (
        "train with: "
        + shlex.join(["lerobot-train", f"--dataset.repo_id={repo_id}", f"--dataset.root={folder}"])
        + " ..."
    )


def rollout_next_steps(folder: Path) -> str:
    """What to run on so101-deploy's saved rollouts, in order: each command on a line of its own, as it pastes."""
    steps = (
        ("score them (add --scorer=heuristic to score offline, without an API key)", "so101-judge", "--dataset.root"),
        ("then check and override the scores in a browser", "so101-review", "--dataset.root"),
        ("then compare policies (list each policy's judged dataset)", "so101-report", "--datasets"),
    )
    lines = ["next steps:"]
    for why, script, option in steps:
        value = f"[{folder}]" if option == "--datasets" else str(folder)
        lines += [f"  {why}:", f"    {shlex.join([script, f'{option}={value}'])}"]
    return "\n".join(lines)
