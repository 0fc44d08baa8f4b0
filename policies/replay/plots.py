"""The report's plots as PNG bytes (matplotlib, Agg backend: no display needed).

trajectories_png(run, findings, limits)  12 joints: recorded action, sent, achieved, policy, clamps
timing_png(run, fps)                     per tick: lateness (real time) and step duration
policy_png(findings)                     per-joint action error and chunk latency
image_png(rgb)                           any RGB array (the overhead stills)
"""

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from policies.replay.analysis import EpisodeFindings
from policies.replay.plan import EpisodeRun
from robot.joints import BIMANUAL_KEYS, JOINT_NAMES, Side, joint_key

_DPI = 72


def _png(figure: plt.Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=_DPI, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def image_png(rgb: np.ndarray) -> bytes:
    """An RGB image as PNG bytes."""
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def trajectories_png(
    run: EpisodeRun, findings: EpisodeFindings, limits: dict[str, tuple[float, float]], *, arms_move: bool
) -> bytes:
    """Every joint over the episode: recorded action, what the source asked, what was sent, what the arm did."""
    trace = run.trace
    frames = trace.frames
    policy = findings.policy is not None
    figure, axes = plt.subplots(len(JOINT_NAMES), 2, figsize=(13, 2.0 * len(JOINT_NAMES)), sharex=True)
    events: dict[str, list[int]] = {}
    for event in findings.safety_events:
        events.setdefault(event.joint, []).append(event.frame)
    for column, side in enumerate(Side):
        for row, joint in enumerate(JOINT_NAMES):
            key = joint_key(side, joint)
            i = BIMANUAL_KEYS.index(key)
            ax = axes[row, column]
            ax.plot(
                np.arange(len(run.recorded_actions)),
                run.recorded_actions[:, i],
                color="0.6",
                lw=2.2,
                label="recorded action",
            )
            if policy:
                ax.plot(frames, trace.requested[:, i], color="tab:orange", lw=1.2, label="policy action")
            ax.plot(frames, trace.sent[:, i], color="tab:blue", lw=1.0, label="sent (after safety)")
            if arms_move and len(frames) > 1:
                ax.plot(
                    frames[:-1], trace.observed[1:, i], color="tab:green", lw=1.0, ls="--", label="achieved (next tick)"
                )
            hits = events.get(key, [])
            if hits:
                rows = np.searchsorted(frames, hits)
                ax.scatter(hits, trace.requested[rows, i], color="tab:red", marker="x", zorder=5, label="safety clamp")
            if key in limits:
                low, high = limits[key]
                ax.axhline(low, color="tab:red", lw=0.6, ls=":")
                ax.axhline(high, color="tab:red", lw=0.6, ls=":")
            ax.set_ylabel(f"{side} {joint}\n({'%' if joint == 'gripper' else 'deg'})", fontsize=8)
            ax.tick_params(labelsize=7)
    axes[-1, 0].set_xlabel("frame")
    axes[-1, 1].set_xlabel("frame")
    handles, labels = [], []
    for ax in axes.ravel():
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    figure.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=8)
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    return _png(figure)


def timing_png(run: EpisodeRun, fps: float, *, realtime: bool) -> bytes:
    """Per tick: how late it started (real-time pace) and how long each tick took end to end."""
    trace = run.trace
    figure, ax = plt.subplots(1, 1, figsize=(13, 2.6))
    if len(trace.wall_s) > 1:
        step_ms = np.diff(trace.wall_s) * 1000
        ax.plot(trace.frames[1:], step_ms, color="tab:blue", lw=0.8, label="tick to tick (wall clock)")
    if realtime:
        ax.plot(trace.frames, trace.late_s * 1000, color="tab:red", lw=0.8, label="late start")
        ax.axhline(1000 / fps, color="0.5", lw=0.6, ls=":", label="one period")
    ax.set_xlabel("frame")
    ax.set_ylabel("ms")
    ax.legend(fontsize=8, loc="upper right")
    figure.tight_layout()
    return _png(figure)


def policy_png(findings: EpisodeFindings) -> bytes | None:
    """Per-joint mean and max action error, and the latency of each chunk."""
    policy = findings.policy
    if policy is None or policy.error is None:
        return None
    error = policy.error
    keys = list(error.mean_abs)
    figure, axes = plt.subplots(1, 2, figsize=(13, 3.2), gridspec_kw={"width_ratios": [3, 1]})
    x = np.arange(len(keys))
    axes[0].bar(x - 0.2, [error.mean_abs[k] for k in keys], width=0.4, label="mean |error|")
    axes[0].bar(x + 0.2, [error.max_abs[k] for k in keys], width=0.4, label="max |error|")
    axes[0].set_xticks(x, [k.removesuffix(".pos") for k in keys], rotation=45, ha="right", fontsize=7)
    axes[0].set_ylabel("deg (grippers %)")
    axes[0].legend(fontsize=8)
    values = [v for v in (policy.latency_p50_ms, policy.latency_p95_ms, policy.latency_max_ms) if v is not None]
    axes[1].bar(["p50", "p95", "max"][: len(values)], values, color="tab:purple")
    axes[1].set_ylabel("chunk latency, ms")
    figure.tight_layout()
    return _png(figure)
