"""The handover benchmark's report: per-handover JSON, the printed table and the summary rows for run_all.

Shared by LeRobot's anchor (benchmarks/handover_lerobot.py) and whatever measures our handover, so both
print and summarise the same figures of benchmarks/handover_trace.py.
"""

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from importlib.metadata import version
from pathlib import Path
from typing import Any

from benchmarks.handover_trace import HandoverFigures
from benchmarks.summary import Row


def figures_json(figures: HandoverFigures) -> dict[str, Any]:
    """A handover's figures with the headline properties spelled out."""
    return asdict(figures) | {
        "pause_to_in_control_s": figures.pause_to_in_control_s,
        "largest_follower_step_deg": figures.largest_follower_step_deg,
        "largest_follower_step_per_tick_deg": figures.largest_follower_step_per_tick_deg,
        "largest_leader_step_deg": figures.largest_leader_step_deg,
        "largest_leader_step_per_tick_deg": figures.largest_leader_step_per_tick_deg,
        "follower_deadline_misses": figures.follower_deadline_misses,
        "follower_missed_ticks": figures.follower_missed_ticks,
    }


LEROBOT_MODE = "LeRobot 0.6.1 DAgger"
OURS_MODE = "so101-deploy corrections"
RAMP_STEP_DEG = 30.0 / 30  # our safety.ramp_speed_deg_s (default) / fps: one handover tick's largest step
ENCODER_STEP_DEG = 360 / 4095  # goals reach the bus in whole encoder counts
STALE_ANCHOR_S = 1800.0  # an anchor JSON older than this was not measured in the same session


def table(handovers: list[dict[str, Any]], mode: str = LEROBOT_MODE) -> str:
    """One row per handover, as Markdown; `mode` names whose handovers they are."""
    return comparison_table([(mode, handovers)])


def comparison_table(sides: list[tuple[str, list[dict[str, Any]]]]) -> str:
    """One row per handover of each (mode, handovers), as Markdown."""
    lines = [
        "| rig | mode | largest follower step, deg/write (deg/tick) | largest leader step, deg/write (deg/tick) "
        "| pause -> in control, s | follower deadline misses (ticks without a command) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for mode, handovers in sides:
        for i, h in enumerate(handovers, 1):
            lines.append(
                f"| virtual, wire | {mode}, handover {i} "
                f"| {h['largest_follower_step_deg']:.2f} ({h['largest_follower_step_per_tick_deg']:.2f}) "
                f"| {h['largest_leader_step_deg']:.2f} ({h['largest_leader_step_per_tick_deg']:.2f}) "
                f"| {h['pause_to_in_control_s']:.2f} | {h['follower_deadline_misses']} ({h['follower_missed_ticks']}) |"
            )
    return "\n".join(lines)


def summary_rows(
    handovers: list[dict[str, Any]] | None,
    ours: list[dict[str, Any]] | None = None,
    *,
    anchor_age_s: float | None = None,
) -> list[Row]:
    """The worst handover's figures as summary rows: LeRobot's alone (`ours` None), or ours against LeRobot's.

    `handovers` are LeRobot's (None: no anchor measured; its column stays empty). `anchor_age_s`: how
    long before ours LeRobot's were measured; older than STALE_ANCHOR_S, the anchor's name says so.
    """

    def worst(side: list[dict[str, Any]] | None, key: str) -> float | None:
        return None if not side else max(h[key] for h in side)

    def leader_kind(side: list[dict[str, Any]] | None, key: str) -> float | None:
        """The worst of both leaders' figure of one joint kind (body in degrees, gripper in % of its range)."""
        if not side:
            return None
        return max(
            kinds[arm][key] for h in side for kinds in [h["by_joint_kind"]] for arm in kinds if arm.endswith("_leader")
        )

    anchor = f"{LEROBOT_MODE} (worst handover)"
    if ours is None:
        return [
            Row(
                "handover_lerobot",
                "handover: largest follower goal step per tick",
                "deg",
                None,
                worst(handovers, "largest_follower_step_per_tick_deg"),
                anchor_name=anchor,
            ),
            Row(
                "handover_lerobot",
                "handover: largest leader goal step per tick",
                "deg",
                None,
                worst(handovers, "largest_leader_step_per_tick_deg"),
                anchor_name=anchor,
            ),
            Row(
                "handover_lerobot",
                "handover: pause request -> person in control",
                "s",
                None,
                worst(handovers, "pause_to_in_control_s"),
                anchor_name=anchor,
            ),
            Row(
                "handover_lerobot",
                "handover: follower ticks without a command",
                "ticks",
                None,
                worst(handovers, "follower_missed_ticks"),
                anchor_name=anchor,
            ),
        ]
    stale = ""
    if anchor_age_s is not None and anchor_age_s > STALE_ANCHOR_S:
        stale = f", measured {anchor_age_s / 60:.0f} min earlier, not in this session"
    anchor += stale
    ramp = (
        f"≤ {RAMP_STEP_DEG + ENCODER_STEP_DEG:.2f} (ramp {RAMP_STEP_DEG:g} deg/tick + 1 encoder count; "
        "a gripper ramps 1 % of its range a tick)"
    )

    def row(metric: str, unit: str, key: str, target: str = "") -> Row:
        return Row(
            "handover_ours", metric, unit, worst(ours, key), worst(handovers, key), anchor_name=anchor, target=target
        )

    # Steps per write: both loops write a goal at most once a tick, and the per-tick figure divides a
    # leader's first step by the few milliseconds since the read it starts from (handover_ours_figures.py).
    # "From the key" includes the policy's own last goal, written in the tick under way when the key came;
    # "while held" starts at our take-over tick (the leaders' torque on).
    return [
        row("handover: largest follower goal step per write, from the key", "deg", "largest_follower_step_deg", ramp),
        Row(
            "handover_ours",
            "handover: largest follower goal step per write, while held",
            "deg",
            worst(ours, "largest_follower_step_while_held_deg"),
            None,
            anchor_name="LeRobot sends the followers none",
            target=ramp,
        ),
        Row(
            "handover_ours",
            "handover: largest leader goal step per write, body joints",
            "deg",
            leader_kind(ours, "body_max_step_deg"),
            worst(handovers, "largest_leader_step_deg"),
            anchor_name=anchor,
            target=f"≤ {RAMP_STEP_DEG + ENCODER_STEP_DEG:.2f}",
        ),
        Row(
            "handover_ours",
            "handover: largest leader gripper goal step per write",
            "% of range",
            leader_kind(ours, "gripper_max_step_percent"),
            None,
            anchor_name="LeRobot moves it with the rest",
            target="≤ 1 % + 1 encoder count",
        ),
        row("handover: pause request -> person in control", "s", "pause_to_in_control_s"),
        row("handover: follower deadline misses", "", "follower_deadline_misses", "0"),
        row("handover: follower ticks without a command", "ticks", "follower_missed_ticks", "0"),
        Row(
            "handover_ours",
            "handover: largest follower goal step within 0.5 s of the release",
            "deg",
            worst(ours, "largest_follower_step_after_release_deg"),
            first_step_after_release(handovers),
            anchor_name=f"{LEROBOT_MODE} (its first follower write after the release, worst handover){stale}",
            target=ramp,
        ),
    ]


def first_step_after_release(handovers: list[dict[str, Any]] | None) -> float | None:
    """The largest first follower step after the release over `handovers` (handover_trace's figure); None: none."""
    steps = [
        timing["first_step_after_release_deg"]
        for h in handovers or []
        for timing in h["follower_timing"].values()
        if timing["first_step_after_release_deg"] is not None
    ]
    return max(steps, default=None)


def run_session(
    args: argparse.Namespace,
    measure: Callable[[argparse.Namespace], dict[str, Any]],
    module: str,
    argv: list[str] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Measure one session; returns its result (traces kept only with --keep-traces) and the meta both runs share."""
    started = time.monotonic()
    loadavg_start = os.getloadavg()
    result = measure(args)
    traces = result.pop("traces")
    if args.keep_traces:
        result["traces"] = traces
    meta = {
        "command": " ".join([Path(sys.executable).name, "-m", module, *(argv or sys.argv[1:])]),
        "elapsed_s": time.monotonic() - started,
        "loadavg_start": loadavg_start,
        "loadavg_end": os.getloadavg(),
        "python": platform.python_version(),
        "lerobot": version("lerobot"),
        "cpu_count": os.cpu_count(),
    }
    return result, meta
