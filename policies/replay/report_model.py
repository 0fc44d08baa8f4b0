"""The replay report's model: each episode's findings and pictures, and the whole run's.

Built by `policies.replay.report.build_report`; written by the output modules (`html` for the
page, `report_json` for the JSON file), which import this module and never the other way round.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from policies.replay.analysis import EpisodeFindings, Thresholds
from policies.replay.plan import EpisodeRun, ReplayRun, Target


@dataclass
class EpisodeReport:
    """One episode's findings and pictures."""

    run: EpisodeRun
    findings: EpisodeFindings
    images: dict[str, bytes] = field(default_factory=dict)  # name -> PNG
    still_frames: list[int] = field(default_factory=list)


@dataclass
class Report:
    """A whole replay's report, ready to write."""

    run: ReplayRun
    thresholds: Thresholds
    command: str
    episodes: list[EpisodeReport]
    problems: list[str]
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%d %H:%M:%S"))

    @property
    def arms_move(self) -> bool:
        """Whether the followers physically moved (virtual or real arms)."""
        return self.run.plan.target is not Target.DRY

    def summary(self) -> dict:
        """Totals over every episode."""
        found = [e.findings for e in self.episodes]
        policy = [f.policy for f in found if f.policy is not None and f.policy.body_mean_abs_deg is not None]
        tracking = [f.tracking.max_abs[f.tracking.worst_joint] for f in found if f.tracking is not None]
        misses = [len(f.deadline_misses) for f in found if f.deadline_misses is not None]
        return {
            "episodes": len(found),
            "frames_replayed": sum(f.frames_replayed for f in found),
            "frames_recorded": sum(f.frames_recorded for f in found),
            "safety_events": sum(len(f.safety_events) for f in found),
            "limit_hits": sum(len(f.limit_hits) for f in found),
            "spikes": sum(len(f.spikes) for f in found),
            "gripper_events": sum(len(f.gripper_events) for f in found),
            "deadline_misses": sum(misses) if misses else None,
            "tracking_worst_deg": max(tracking) if tracking else None,
            "policy_body_mean_abs_deg": float(np.mean([p.body_mean_abs_deg for p in policy])) if policy else None,
            "stopped_by": self.run.stopped_by,
        }
