"""The replay report: findings per episode, plots and stills, written as one HTML page and one JSON file.

    report = build_report(run, Thresholds(), stills=4, command="so101-replay ...")
    files = write_report(report, Path("outputs/replay/fold-20260101-120000"))   # report.html, report.json

The HTML page is self-contained (plots and stills inline as base64 PNG) so it can be mailed or
attached to an issue. The JSON file holds the same findings plus every tick's trajectories
(frames, recorded action, requested, sent, observed, which reads were stale), for scripts and
tests. A problem found while writing (a recorded overhead frame that cannot be decoded) is listed
in both, not raised: the replay's results are never lost to it.
"""

import dataclasses
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from policies.replay.analysis import EpisodeFindings, Thresholds, analyse
from policies.replay.errors import VideoError
from policies.replay.frames import stills as decode_stills
from policies.replay.plan import EpisodeRun, ReplayRun, Target
from policies.replay.plots import image_png, policy_png, timing_png, trajectories_png
from policies.replay.sketch import overhead_sketches, side_by_side, still_frames

REPORT_FORMAT = "so101-replay report 1"
OVERHEAD = "overhead"  # the camera whose frames go beside the sketch (else the dataset's first camera)
_DECIMALS = 5  # trajectories in the JSON file: 1e-5 deg, far below one encoder step (0.088 deg)


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


def build_report(run: ReplayRun, thresholds: Thresholds, *, stills: int = 4, command: str = "") -> Report:
    """Analyse every episode and draw its plots and stills."""
    report = Report(run, thresholds, command, [], [])
    plan = run.plan
    realtime = plan.pace == "realtime"
    for episode in run.episodes:
        findings = analyse(run, episode, thresholds)
        item = EpisodeReport(episode, findings)
        if len(episode.trace.frames):
            item.images["trajectories"] = trajectories_png(episode, findings, run.limits, arms_move=report.arms_move)
            item.images["timing"] = timing_png(episode, plan.fit.fps, realtime=realtime)
        policy = policy_png(findings)
        if policy is not None:
            item.images["policy"] = policy
        _add_stills(report, item, stills)
        report.episodes.append(item)
    return report


def _add_stills(report: Report, item: EpisodeReport, count: int) -> None:
    trace = item.run.trace
    findings = item.findings
    notable = [e.frame for e in findings.limit_hits[:1]] + [s.first_frame for s in findings.spikes[:1]]
    frames = still_frames(len(trace.frames), count, notable)
    if not frames:
        return
    dataset = report.run.plan.dataset
    fps = report.run.plan.fit.dataset_fps
    sketches = overhead_sketches(trace.sent, fps, frames)
    info = dataset.episode(item.run.episode)
    videos = {v.name: v for v in info.videos}
    video = videos.get(OVERHEAD) or next(iter(videos.values()), None)
    recorded: dict[int, np.ndarray] = {}
    if video is not None:
        try:
            recorded = decode_stills(video, frames, fps)
        except VideoError as e:
            report.problems.append(f"episode {item.run.episode}: recorded frames for the stills: {e}")
    rows = [side_by_side(k, sketches[k], recorded.get(k)) for k in frames if k in sketches]
    if rows:
        width = max(r.shape[1] for r in rows)
        padded = [np.pad(r, ((0, 6), (0, width - r.shape[1]), (0, 0)), constant_values=255) for r in rows]
        item.images["stills"] = image_png(np.concatenate(padded, axis=0))
        item.still_frames = frames


def _plain(value: object) -> object:
    """JSON-ready values: numpy to Python, NaN/inf to null, tuples to lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Path):
        return str(value)
    return value


def _rounded(matrix: np.ndarray) -> list:
    return _plain(np.round(matrix, _DECIMALS))  # type: ignore[return-value]


def report_json(report: Report) -> dict:
    """Everything the report holds, as plain JSON data."""
    run = report.run
    plan = run.plan
    episodes = []
    for item in report.episodes:
        trace = item.run.trace
        entry = dataclasses.asdict(item.findings)
        entry["still_frames"] = item.still_frames
        entry["trajectories"] = {
            "frames": trace.frames.tolist(),
            "recorded_action": _rounded(item.run.recorded_actions),
            "requested": _rounded(trace.requested),
            "sent": _rounded(trace.sent),
            "observed": _rounded(trace.observed),
            "stale": trace.stale.tolist(),  # the tick's read failed: `observed` repeats the last one
        }
        episodes.append(entry)
    return _plain(
        {
            "format": REPORT_FORMAT,
            "created": report.created,
            "command": report.command,
            "dataset": {
                "root": plan.dataset.root,
                "repo_id": plan.dataset.repo_id,
                "fps": plan.dataset.fps,
                "robot_type": plan.dataset.robot_type,
                "action_names": plan.dataset.action_names,
                "cameras": {name: list(size) for name, size in plan.dataset.cameras.items()},
                "episodes": list(plan.episodes),
            },
            "run": {
                "target": plan.target,
                "pace": plan.pace,
                "fps": plan.fit.fps,
                "time_scale": plan.fit.time_scale,
                "held_joints": plan.fit.held,
                "joint_map": dict(plan.fit.action_columns) if plan.fit.mapped else None,
                "policy": run.policy,
                "policy_notes": run.policy_notes,
                "stopped_by": run.stopped_by,
            },
            "limits": {k: list(v) for k, v in run.limits.items()},
            "thresholds": dataclasses.asdict(report.thresholds),
            "summary": report.summary(),
            "episodes": episodes,
            "problems": report.problems,
        }
    )  # type: ignore[return-value]


def write_report(report: Report, folder: Path) -> tuple[Path, Path]:
    """Write report.html and report.json into `folder` (created); returns their paths."""
    from policies.replay.html import render_html

    folder.mkdir(parents=True, exist_ok=True)
    json_path = folder / "report.json"
    html_path = folder / "report.html"
    json_path.write_text(json.dumps(report_json(report), indent=1, allow_nan=False))
    html_path.write_text(render_html(report))
    return html_path, json_path
