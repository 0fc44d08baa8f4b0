"""Whether the LLM judge can see a dataset: it needs our camera views and their video files.

A foreign dataset may name its cameras otherwise (`observation.images.top`) or come without its
videos; it still opens (the heuristic scorer and the review page need only the joints), so the LLM
judge checks here, before any estimate or call, and names both ways on.
"""

from __future__ import annotations

from evaluation.episode_source import DatasetSource
from evaluation.judge.command_line import CommandLine
from evaluation.view_map import suggest
from robot.joints import CAMERA_ROLES


def video_problem(source: DatasetSource, command: CommandLine) -> str | None:
    """One line saying why the LLM judge cannot see the dataset, with next steps; None when it can."""
    heuristic = command.with_args("--scorer=heuristic", without=("--dry_run",))
    if source.missing_videos:
        first = source.missing_videos[0].relative_to(source.root)
        return (
            f"{len(source.missing_videos)} video file(s) of {source.root} are missing (first: {first}); the LLM "
            f"judge needs them. Next: put the dataset's videos/ folder back, or score the joints alone: {heuristic}"
        )
    if not any(ep.views for ep in source.episodes):
        cameras = set(source.cameras)
        mapped = command.with_args(suggest(cameras).split(" ", 1)[0]) if cameras else heuristic
        return (
            f"{source.root} has none of our camera views {list(CAMERA_ROLES)} "
            f"(its cameras: {sorted(cameras) or 'none'}); the LLM judge needs pictures. Next: say which camera "
            f"is which view: {mapped}; or score the joints alone: {heuristic}"
        )
    return None
