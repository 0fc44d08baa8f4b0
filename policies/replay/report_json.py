"""The replay report as JSON: the same findings as the page, plus every tick's trajectories.

Scripts and tests read it: frames, recorded action, requested, sent, observed, and which reads
were stale. Values are plain JSON (numpy to Python, NaN and inf to null).
"""

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np

from policies.replay.report_model import Report

REPORT_FORMAT = "so101-replay report 1"
_DECIMALS = 5  # trajectories in the JSON file: 1e-5 deg, far below one encoder step (0.088 deg)


def _plain(value: object) -> Any:
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
    return _plain(np.round(matrix, _DECIMALS))


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
    )
