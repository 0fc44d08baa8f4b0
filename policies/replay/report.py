"""The replay report: findings per episode, plots and stills, written as one HTML page and one JSON file.

    report = build_report(run, Thresholds(), stills=4, command="so101-replay ...")
    files = write_report(report, Path("outputs/replay/fold-20260101-120000"))   # report.html, report.json

The HTML page is self-contained (plots and stills inline as base64 PNG) so it can be mailed or
attached to an issue. The JSON file holds the same findings plus every tick's trajectories
(frames, recorded action, requested, sent, observed, which reads were stale), for scripts and
tests. A problem found while writing (a recorded overhead frame that cannot be decoded) is listed
in both, not raised: the replay's results are never lost to it.

    report_model (the dataclasses) <- html (the page), report_json (the JSON) <- this module
"""

import json
from pathlib import Path

import numpy as np

from policies.replay.analysis import Thresholds, analyse
from policies.replay.errors import VideoError
from policies.replay.frames import stills as decode_stills
from policies.replay.html import render_html
from policies.replay.plan import ReplayRun
from policies.replay.plots import image_png, policy_png, timing_png, trajectories_png
from policies.replay.report_json import report_json
from policies.replay.report_model import EpisodeReport, Report
from policies.replay.sketch import overhead_sketches, side_by_side, still_frames

OVERHEAD = "overhead"  # the camera whose frames go beside the sketch (else the dataset's first camera)


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


def write_report(report: Report, folder: Path) -> tuple[Path, Path]:
    """Write report.html and report.json into `folder` (created); returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    json_path = folder / "report.json"
    html_path = folder / "report.html"
    json_path.write_text(json.dumps(report_json(report), indent=1, allow_nan=False))
    html_path.write_text(render_html(report))
    return html_path, json_path
