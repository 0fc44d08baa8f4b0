"""The replay report as one self-contained HTML page (plots and stills inline as base64 PNG)."""

import base64
from collections.abc import Iterable, Sequence
from html import escape

from policies.replay.analysis import EpisodeFindings
from policies.replay.report_model import EpisodeReport, Report

_MAX_ROWS = 200  # longest event table shown; the JSON file has them all
_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}.bad{color:#b00020;font-weight:600}
.ok{color:#1b7f3b}.note{color:#666;font-size:13px}img{max-width:100%;border:1px solid #eee;margin:6px 0}
"""


def _table(header: Sequence[str], rows: Iterable[Sequence[object]], limit: int = _MAX_ROWS) -> str:
    rows = list(rows)
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in rows[:limit])
    more = f'<p class="note">{len(rows) - limit} more in report.json</p>' if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{body}</table>{more}"


def _cell(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return escape(str(value))


def _image(png: bytes | None, alt: str) -> str:
    if not png:
        return ""
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _count(n: int) -> str:
    return f'<span class="{"bad" if n else "ok"}">{n}</span>'


def _summary_rows(report: Report) -> list[list[object]]:
    rows = []
    for item in report.episodes:
        f = item.findings
        kinds = {k: sum(1 for e in f.safety_events if e.kind == k) for k in ("limit", "step", "velocity", "non_finite")}
        tracking = f.tracking.max_abs[f.tracking.worst_joint] if f.tracking else None
        policy = f.policy.body_mean_abs_deg if f.policy else None
        rows.append(
            [
                f.episode,
                f"{f.frames_replayed}/{f.frames_recorded}",
                f.stopped_by,
                kinds["limit"],
                kinds["step"] + kinds["velocity"],
                kinds["non_finite"],
                len(f.spikes),
                len(f.gripper_events),
                None if f.deadline_misses is None else len(f.deadline_misses),
                f.replay_speed,
                tracking,
                policy,
            ]
        )
    return rows


def _episode(item: EpisodeReport, report: Report) -> str:
    f: EpisodeFindings = item.findings
    parts = [
        f"<h2>Episode {f.episode}</h2>",
        f'<p class="note">task: {escape(f.task)}; stopped by: '
        f"{escape(f.stopped_by)}; ease-in ticks: {f.ease_in_ticks} (largest step {f.ease_in_max_step_deg:.2f}°);"
        f" loop {f.achieved_hz:.2f} Hz on its clock,"
        f" {f.replay_speed:.2f}× real time</p>",
    ]
    if f.sent_vs_recorded_max_abs is not None:
        line = f"largest |sent − recorded| {f.sent_vs_recorded_max_abs:.4g}"
        if f.commanded_vs_recorded_max_abs is not None:
            line += (
                "; largest |commanded − recorded| (dry arms, after the safety layer)"
                f" {f.commanded_vs_recorded_max_abs:.4g}"
            )
        parts.append(f'<p class="note">{line} (deg; grippers %)</p>')
    parts.append(_image(item.images.get("trajectories"), "joint trajectories"))
    parts.append(
        f"<h3>Safety interventions ({_count(len(f.safety_events))}, limit hits {_count(len(f.limit_hits))})</h3>"
    )
    if f.safety_events:
        parts.append(
            _table(
                ["frame", "joint", "kind", "requested", "sent"],
                [[e.frame, e.joint, e.kind, e.requested, e.sent] for e in f.safety_events],
            )
        )
    parts.append(f"<h3>Motion spikes ({_count(len(f.spikes))})</h3>")
    if f.spikes:
        parts.append(
            _table(
                ["first frame", "last frame", "joint", "quantity", "peak frame", "peak", "threshold"],
                [
                    [s.first_frame, s.last_frame, s.joint, s.quantity, s.peak_frame, s.peak, s.threshold]
                    for s in f.spikes
                ],
            )
        )
    parts.append(f"<h3>Gripper events ({len(f.gripper_events)})</h3>")
    if f.gripper_events:
        parts.append(
            _table(
                ["first frame", "last frame", "gripper", "event", "from %", "to %"],
                [
                    [g.first_frame, g.last_frame, g.joint, g.kind, g.from_percent, g.to_percent]
                    for g in f.gripper_events
                ],
            )
        )
    if f.deadline_misses is not None:
        parts.append(f"<h3>Deadline misses ({_count(len(f.deadline_misses))})</h3>")
        if f.deadline_misses:
            parts.append(
                _table(["frame", "late ms", "skipped"], [[d.frame, d.late_ms, d.skipped] for d in f.deadline_misses])
            )
    parts.append(_image(item.images.get("timing"), "tick timing"))
    for title, errors in (
        ("Tracking: state one tick later − goal sent", f.tracking),
        ("Reproduction: state − state recorded at that frame", f.reproduction),
    ):
        if errors is not None:
            parts.append(f"<h3>{title}</h3>")
            parts.append(
                _table(
                    ["joint", "mean |Δ|", "p95 |Δ|", "max |Δ|"],
                    [[k, errors.mean_abs[k], errors.p95_abs[k], errors.max_abs[k]] for k in errors.mean_abs],
                )
            )
    if f.policy is not None:
        p = f.policy
        parts.append("<h3>Policy (open loop) against the recorded actions</h3>")
        parts.append(
            _table(
                ["measure", "value"],
                [
                    ["ticks / starved", f"{p.ticks} / {p.starved_ticks}"],
                    ["mean |error|, body joints (deg)", p.body_mean_abs_deg],
                    ["chunks", p.chunks],
                    ["chunk seams", p.seams],
                    ["seam jump mean / max (deg)", f"{_cell(p.seam_jump_mean_deg)} / {_cell(p.seam_jump_max_deg)}"],
                    ["step within a chunk, mean (deg)", p.within_chunk_step_mean_deg],
                    ["recorded step at the seams, mean (deg)", p.recorded_step_at_seams_mean_deg],
                    ["seam ratio (seam / within)", p.seam_ratio],
                    [
                        "chunk latency p50 / p95 / max (ms)",
                        f"{_cell(p.latency_p50_ms)} / {_cell(p.latency_p95_ms)} / {_cell(p.latency_max_ms)}",
                    ],
                    [
                        "control-thread wait in next_action p50 / max (ms)",
                        f"{_cell(p.call_p50_ms)} / {_cell(p.call_max_ms)}",
                    ],
                    ["loop blocked on inference (s)", p.blocked_s],
                ],
            )
        )
        if p.error is not None:
            parts.append(
                _table(
                    ["joint", "mean |err|", "p95 |err|", "max |err|", "rmse"],
                    [
                        [k, p.error.mean_abs[k], p.error.p95_abs[k], p.error.max_abs[k], p.rmse.get(k)]
                        for k in p.error.mean_abs
                    ],
                )
            )
        parts.append(_image(item.images.get("policy"), "policy error and latency"))
    if "stills" in item.images:
        parts.append(f"<h3>Overhead: commanded motion (sketch) beside the recording, frames {item.still_frames}</h3>")
        parts.append(_image(item.images["stills"], "overhead stills"))
    return "\n".join(parts)


def render_html(report: Report) -> str:
    """The whole page."""
    run = report.run
    plan = run.plan
    dataset = plan.dataset
    summary = report.summary()
    title = f"so101-replay: {dataset.repo_id} on {plan.target} arms, {plan.pace} pace"
    header = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="note">{escape(report.created)} · dataset {escape(str(dataset.root))} ({dataset.fps} fps)'
        f" · replayed at {plan.fit.fps:g} fps · episodes {list(plan.episodes)}"
        f" · stopped by {escape(run.stopped_by)}</p>",
    ]
    if report.command:
        header.append(f'<p class="note"><code>{escape(report.command)}</code></p>')
    if run.policy:
        header.append(f"<p>Policy: {escape(run.policy)}</p>")
    header += [f'<p class="note">{escape(note)}</p>' for note in run.policy_notes]
    if plan.fit.held:
        header.append(f'<p class="note">held (not driven by the dataset): {escape(", ".join(plan.fit.held))}</p>')
    header += [f'<p class="bad">{escape(problem)}</p>' for problem in report.problems]
    header.append(_table(["measure", "value"], [[k.replace("_", " "), v] for k, v in summary.items()]))
    header.append(
        _table(
            [
                "episode",
                "frames",
                "stopped by",
                "limit hits",
                "step/velocity caps",
                "non-finite",
                "spikes",
                "gripper events",
                "deadline misses",
                "× real time",
                "tracking worst",
                "policy |err| deg",
            ],
            _summary_rows(report),
        )
    )
    limits = _table(["joint", "low", "high"], [[k, lo, hi] for k, (lo, hi) in run.limits.items()])
    body = "\n".join(header + [_episode(item, report) for item in report.episodes])
    footer = f"<h2>Safety limits and thresholds</h2>{limits}<pre class='note'>{escape(str(report.thresholds))}</pre>"
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body>{body}\n{footer}</body></html>"
    )
