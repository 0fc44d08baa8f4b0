"""A health report of a whole dataset: the checks lerobot-doctor-style tools make, each finding tied to an episode.

    DatasetSource ──read_arrays──> EpisodeArrays ──> check_signals, check_timestamps, check_stats,
                                                     check_videos (health_checks.py),
                                                     check_near_duplicates, check_joint_ranges,
                                                     check_joints_follow (health_motion.py),
                                                     check_action_lag, check_state_sides (health_alignment.py),
                                                     check_camera_sides (health_cameras.py)
                                                 ──> HealthReport: one CheckSummary per check, all findings

Pure: it reads the dataset and writes nothing. A check that raises on an odd dataset becomes one
finding saying why it could not run; the other checks still run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from evaluation.episode_source import DatasetSource
from evaluation.review.health_alignment import MAX_LAG_S, check_action_lag, check_state_sides
from evaluation.review.health_cameras import check_camera_sides
from evaluation.review.health_checks import (
    SEVERITIES,
    CheckOutcome,
    EpisodeArrays,
    Finding,
    Severity,
    check_signals,
    check_stats,
    check_timestamps,
    check_videos,
    read_arrays,
)
from evaluation.review.health_motion import check_joint_ranges, check_joints_follow, check_near_duplicates

log = logging.getLogger(__name__)

Check = Callable[[DatasetSource, EpisodeArrays], CheckOutcome]

# (name, what it checks, the check), in the order the page shows them.
CHECKS: tuple[tuple[str, str, Check], ...] = (
    ("signals", "each episode's state and action rows read back, as many as its length", check_signals),
    (
        "timestamps",
        "frame_index runs 0..length-1; timestamps rise by 1/fps (± half a frame) and sit on the video's frames",
        check_timestamps,
    ),
    (
        "stats",
        "meta/stats.json has finite min/max/mean/std of state and action, and its min/max match the data",
        check_stats,
    ),
    (
        "videos",
        "each episode's span in each video covers its length; video files exist, are not empty, hold enough frames",
        check_videos,
    ),
    (
        "near_duplicates",
        "no episode's state (resampled to 64 points) stays within 0.5 of an earlier episode's at a similar length",
        check_near_duplicates,
    ),
    (
        "joint_ranges",
        "no body joint at LeRobot's ±100 clamp or past ±200°, grippers within -5..105 %; episodes far past the others",
        check_joint_ranges,
    ),
    (
        "joints_follow",
        "each joint whose action moved 5 or more followed it: its state moved at least a tenth as far",
        check_joints_follow,
    ),
    (
        "action_lag",
        f"observation.state answers action as a follower does (a frame later at the earliest, within "
        f"{MAX_LAG_S * 1000:.0f} ms on average): the actions are not shifted",
        check_action_lag,
    ),
    (
        "state_sides",
        "each arm's observation.state block follows that arm's actions, not the other arm's: not swapped",
        check_state_sides,
    ),
    (
        "camera_sides",
        "each wrist video changes with its own arm's motion more than with the other arm's: not swapped",
        check_camera_sides,
    ),
)


@dataclass(frozen=True)
class CheckSummary:
    """One check's line in the report."""

    check: str  # e.g. "timestamps"
    description: str  # what it checks, for a person
    checked: int  # items examined (episodes, or features for stats)
    passed: int  # of those, items with no error or warning
    notes: tuple[str, ...]  # lines worth showing beside it, e.g. each joint's range over the dataset


@dataclass(frozen=True)
class HealthReport:
    """Everything the health view shows about one dataset."""

    dataset_root: str  # the folder checked
    episodes: int  # episodes in its metadata
    checks: tuple[CheckSummary, ...]  # in CHECKS order
    findings: tuple[Finding, ...]  # grouped by check, in CHECKS order

    def of(self, check: str) -> tuple[Finding, ...]:
        """The findings of one check."""
        return tuple(f for f in self.findings if f.check == check)

    def count(self, severity: Severity) -> int:
        """How many findings have this severity."""
        return sum(f.severity == severity for f in self.findings)

    def lines(self) -> list[str]:
        """One line per error and warning, worst first, then a summary line (what `so101-review --check` prints)."""
        shown = sorted((f for f in self.findings if f.severity != "info"), key=lambda f: SEVERITIES.index(f.severity))
        errors, warnings = self.count("error"), self.count("warning")
        verdict = (
            "fix the errors before lerobot-train: it would learn from them"
            if errors
            else "no errors: ready for lerobot-train"
        )
        summary = (
            f"{self.dataset_root}: {self.episodes} episodes, {len(self.checks)} checks, {errors} errors, "
            f"{warnings} warnings, {self.count('info')} remarks; {verdict}"
        )
        return [f"{f.severity} [{f.check}] {f.detail}" for f in shown] + [summary]

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON types (finding severities: error, warning, info)."""
        return asdict(self) | {"counts": {s: self.count(s) for s in SEVERITIES}}


def dataset_health(source: DatasetSource) -> HealthReport:
    """Run every check on an opened dataset (seconds for hundreds of episodes: signals are read once)."""
    arrays = read_arrays(source)
    summaries, findings = [], []
    for name, description, check in CHECKS:
        try:
            outcome = check(source, arrays)
        except Exception as e:  # a foreign dataset can break a check in ways no list foresees; report, go on
            log.warning("health check %s could not run on %s", name, source.root, exc_info=True)
            why = f"could not run on this dataset: {type(e).__name__}: {e}"
            outcome = CheckOutcome(0, 0, (Finding(name, "warning", None, why),))
        summaries.append(CheckSummary(name, description, outcome.checked, outcome.passed, outcome.notes))
        findings += outcome.findings
    return HealthReport(str(source.root), len(source.episodes), tuple(summaries), tuple(findings))
