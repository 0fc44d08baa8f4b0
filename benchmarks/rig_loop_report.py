"""The rig-loop benchmark's Markdown tables and notes, from its per-condition results (see rig_loop.py)."""

from __future__ import annotations

import math
from typing import Any

OURS, LEROBOT, BUSY = "ours", "lerobot", "busy"
TARGETS = {"rate_error_pct": 0.01, "p99_ms": {"idle": 0.3, "cameras": 2.0, "cameras+encode": 2.0}}


def row(cells: list[Any]) -> str:
    """One Markdown table row."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def pacing_table(results: list[dict[str, Any]]) -> str:
    head = "| condition | loop step | pacing | periods | achieved Hz | rate error %"
    head += " | abs(period − 33.33 ms) p50 / p99 / max ms | > 1.1× % | > 1.5× | < 0.9× | target: rate / p99 | met |"
    lines = [head, "|" + "---|" * 12]
    for r in results:
        target_p99 = TARGETS["p99_ms"][r["condition"]]
        for group, by_pacing in r["pacing"].items():
            for pacing, label in ((OURS, "ours (LoopTimer)"), (LEROBOT, "LeRobot (relative)")):
                s = by_pacing[pacing]
                met = abs(s["rate_error_pct"]) <= TARGETS["rate_error_pct"] and s["abs_dev_p99_ms"] <= target_p99
                cells = [
                    r["condition"],
                    group,
                    label,
                    s["periods"],
                    f"{s['achieved_hz']:.3f}",
                    f"{s['rate_error_pct']:+.3f}",
                    f"{s['abs_dev_p50_ms']:.3f} / {s['abs_dev_p99_ms']:.2f} / {s['abs_dev_max_ms']:.2f}",
                    f"{s['over_1.1x_pct']:.1f}",
                    s["over_1.5x"],
                    s["under_0.9x"],
                    f"≤ {TARGETS['rate_error_pct']} % / ≤ {target_p99} ms",
                    "yes" if met else "no",
                ]
                lines.append(row(cells))
    return "\n".join(lines)


def bus_table(results: list[dict[str, Any]]) -> str:
    head = "| condition | step | ticks | fails | median ms | p90 ms | p99 ms | max ms | mean ms"
    head += " | LeRobot ÷ ours (median / p99) |"
    lines = [head, "|" + "---|" * 10]
    for r in results:
        ours, stock = r["step"][OURS], r["step"][LEROBOT]
        for impl, label in ((OURS, "ours: observe + act"), (LEROBOT, "LeRobot: get_action + send + get_obs")):
            s = r["step"][impl]
            ratio = f"{stock['p50_ms'] / ours['p50_ms']:.2f} / {stock['p99_ms'] / ours['p99_ms']:.2f}"
            cells = [r["condition"], label, s["ticks"], s["failures"]]
            cells += [f"{s[k]:.2f}" for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms")]
            cells.append(ratio if impl == OURS else "")
            lines.append(row(cells))
    return "\n".join(lines)


def machine_table(results: list[dict[str, Any]]) -> str:
    head = "| condition | loadavg before → after | busy % | steal % | CPU cores: this process / emulator / encoder"
    head += " | other processes, cores | camera frames/s | encoder fps, threads by class |"
    lines = [head, "|" + "---|" * 8]
    for r in results:
        m = r["machine"]
        before, after = (" ".join(f"{v:.2f}" for v in m[k]) for k in ("loadavg_before", "loadavg_after"))
        cores = " / ".join(f"{m['cpu_cores'].get(k, math.nan):.2f}" for k in ("this_process", "emulator", "encoder"))
        cams = ", ".join(f"{v:.1f}" for v in m["camera_slots_per_s"].values()) or "-"
        encoder = "-"
        if "encoder" in r:
            classes = ", ".join(f"{n} {c}" for n, c in r["encoder_thread_classes"].items())
            encoder = f"{r['encoder'].get('fps_while_measuring', math.nan):.2f}, {classes}"
        cells = [r["condition"], f"{before} → {after}", f"{m['machine_busy_pct']:.0f}", f"{m['steal_pct']:.2f}"]
        cells += [cores.replace("nan", "-"), f"{m['other_cores']:.2f}", cams, encoder]
        lines.append(row(cells))
    return "\n".join(lines)


def notes(results: list[dict[str, Any]]) -> str:
    lines = []
    for r in results:
        ours = r["step"][OURS]
        timer = "; ".join(
            f"{group}: {p['loop_timer_overruns']} overruns, {p['loop_timer_skipped']} skipped deadlines,"
            f" steady rate error {p['steady_rate_error_pct']:+.4f} %"
            for group, p in ((g, by_pacing[OURS]) for g, by_pacing in r["pacing"].items())
        )
        lines.append(
            f"- {r['condition']}: our observe() reads all four arms in median {ours['read_p50_ms']:.2f} ms,"
            f" p99 {ours['read_p99_ms']:.2f} ms. LoopTimer with {timer}."
            f" Late reply bytes flushed between blocks: {r['stale_bytes_flushed_between_blocks']}."
        )
        for impl in (OURS, LEROBOT):
            errors = r["step"][impl]["errors"]
            if errors:
                lines.append(f"  - {impl} failures ({r['step'][impl]['failures']}), first: {errors[0][:240]}")
        if "error" in r.get("encoder", {}):
            lines.append(f"  - encoder: {r['encoder']['error']}")
    lines.append(
        "- steady rate error: LoopTimer's rate from each block's second tick to its last; the table's rate also"
        " charges one wake-up delay per block (the first tick of a block is due at once, its end is as late as"
        " any wake-up), an artifact of alternating blocks."
    )
    return "\n".join(lines)
