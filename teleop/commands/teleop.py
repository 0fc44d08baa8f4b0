"""so101-teleop: leader-to-follower teleoperation at 30 Hz, safety on, Ctrl-C to a safe stop.

    so101-teleop                                                  # the virtual rig (its operator folds a cloth)
    so101-teleop --config_path=hardware_configs/so101_bimanual.yaml
    so101-teleop --duration_s=10 --json=true                      # a timed run with a JSON summary

Each follower first ramps to its leader at `safety.ramp_speed_deg_s` (a change of the source of goals:
the safety layer's transition rule), then follows it; a watchdog hold ending ramps the same way. Keys (a
terminal): q stop, e e-stop (the followers freeze with torque on, through the exit). The status line
shows the loop rate, period error, bus time, camera skew and motor temperatures. At the end the
followers go to rest and release torque (or hold: `--rig.safety.on_exit=hold`). Ctrl-C, SIGTERM and
SIGHUP (a dropped SSH link) all end it so; a second Ctrl-C or SIGTERM within 3 s e-stops instead
(torque kept on where the followers are) and exits at once. Exit status 1 after a safety stop.
"""

import json
import sys
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from robot.cli import parse_command, run_command
from robot.config import RigConfig
from robot.config_checks import reject_non_finite
from robot.control_loop import ControlLoop, Step
from robot.errors import ConfigError
from robot.loop_timer import LoopStats
from robot.rig import BimanualRig, SafetyStopError
from robot.rig_ports import rig_ports
from robot.shell.old_spellings import RIG_RATE
from robot.signals import StopSignals
from robot.stop_flag import StopFlag
from robot.virtual.config import VirtualOperator
from teleop.keys import Key, KeyReader
from teleop.leader_source import LeaderSource
from teleop.live_view.config import LiveViewConfig
from teleop.live_view.session import live_view_hooks
from teleop.status_line import StatusLine
from teleop.stop_reason import StopKind, StopReason
from teleop.tracking import TrackingHook

OLD_SPELLINGS = RIG_RATE  # --fps, now --rig.fps (robot/shell/old_spellings.py)


@dataclass(frozen=True)
class TeleopConfig:
    """Options of so101-teleop (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    # Stop after this many seconds; 0 runs until Ctrl-C
    duration_s: float = 0.0
    # Virtual rig only: what the scripted operator's hands do on the leaders
    virtual_operator: VirtualOperator = VirtualOperator.CLOTH_FOLD
    # A browser page with the cameras and the joint traces while teleoperating (off by default)
    view: LiveViewConfig = field(default_factory=LiveViewConfig)
    # Print a JSON summary instead of the status line and table
    json: bool = False

    def __post_init__(self) -> None:
        reject_non_finite(self, "")
        if self.duration_s < 0:
            raise ConfigError(f"duration_s={self.duration_s}: must be >= 0")


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-teleop: parse, follow the leaders until a stop, report."""
    stops = StopSignals()  # SIGINT, SIGTERM, SIGHUP: the loop stops at its next tick, then the safe exit

    def body() -> int:
        config = parse_command(TeleopConfig, argv, old_spellings=OLD_SPELLINGS)
        console = Console(stderr=config.json)
        with rig_ports(config.rig) as found:
            found.start_operator(config.virtual_operator)
            with stops.rig(BimanualRig(config.rig, found.ports)) as rig, KeyReader() as keys:
                summary = _teleoperate(config, rig, keys, console, stops)
            if found.control is not None:
                with found.client() as client:
                    client.stop()
        if config.json:
            print(json.dumps(summary, indent=2))
        else:
            _print(summary, console)
        return 1 if summary["failed"] else 0

    return run_command(body, stops, argv)


class _Keys:
    """A step hook: q stops the loop, e e-stops now; the status line says whether the followers follow yet."""

    def __init__(self, keys: KeyReader, rig: BimanualRig, source: LeaderSource, status: StatusLine) -> None:
        self.keys, self.rig, self.source, self.status = keys, rig, source, status
        self.stop = StopFlag()  # the loop's (it is built after this hook)
        self.quit = False

    def on_step(self, step: Step) -> None:
        for key in self.keys.poll():
            if key is Key.ESTOP:
                self.rig.freeze("e-stop")  # now; the next tick's act ends the loop
            elif key is Key.STOP:
                self.quit = True
                self.stop.set()
        self.status.extra = "following" if self.source.engaged else "ramping to the leaders"


def _teleoperate(
    config: TeleopConfig, rig: BimanualRig, keys: KeyReader, console: Console, stops: StopSignals
) -> dict[str, Any]:
    source = LeaderSource(rig)
    # Judged once the followers follow the leaders, after a settling second.
    tracking = TrackingHook(skip_ticks=config.rig.fps, active=lambda: source.engaged)
    status = StatusLine(
        rig, console, hints="q stop  e e-stop  Ctrl-C stop safely" if keys.enabled else "Ctrl-C: stop safely"
    )
    watch = _Keys(keys, rig, source, status)
    with live_view_hooks(config.view, console.print) as view:
        hooks = [watch, tracking, *view] + ([] if config.json else [status])
        loop = ControlLoop(
            rig, source, hooks=hooks, realtime_priority=config.rig.realtime_priority, stop_flag=watch.stop
        )
        safety: SafetyStopError | None = None
        try:
            with stops.stopping(loop.stop), status if not config.json else nullcontext():
                stats = loop.run(config.duration_s or None)
        except KeyboardInterrupt:  # Ctrl-C where the handlers could not be installed (not the main thread)
            stats = loop.timer.stats()
        except SafetyStopError as e:
            stats, safety = loop.timer.stats(), e
    reason = _reason(config, stops, watch.quit, safety)
    return _summary(reason, stats, loop, rig, source, tracking)


def _reason(config: TeleopConfig, stops: StopSignals, quit_key: bool, safety: SafetyStopError | None) -> StopReason:
    if safety is not None and not stops.escalated:  # an e-stop a second signal caused is the signal's
        return StopReason(StopKind.SAFETY, str(safety))
    if stops.reason is not None:
        return StopReason(StopKind.SIGNAL, stops.reason)
    if quit_key:
        return StopReason(StopKind.KEY, "q")
    return StopReason(StopKind.DONE, "duration") if config.duration_s else StopReason(StopKind.SIGNAL, "Ctrl-C")


def _summary(
    reason: StopReason,
    stats: LoopStats,
    loop: ControlLoop,
    rig: BimanualRig,
    source: LeaderSource,
    tracking: TrackingHook,
) -> dict[str, Any]:
    track = tracking.stats()
    return {
        "stopped_by": reason.text,
        "failed": reason.failed,
        "ticks": stats.ticks,
        "achieved_hz": round(stats.achieved_hz, 3),
        "rate_error_percent": round(stats.rate_error * 100, 4),
        "period_deviation_p99_ms": round(stats.period_deviation_p99_ms, 3),
        "overruns": stats.overruns,
        "missed_reads": loop.missed_reads,
        "safety_events": len(rig.counters.events),
        "safety_events_by_kind": dict(
            Counter(f"{e.arm}.{e.joint}:{e.kind}" for e in rig.counters.events).most_common()
        ),
        "gripper_reliefs": rig.counters.gripper_reliefs,
        "held_ticks": rig.counters.held_ticks,
        "engaged": source.engaged,
        "tracking_ticks": track.ticks,
        "tracking_late_ticks_excluded": track.late_ticks_excluded,
        "tracking_max_abs_deg": {k: round(v, 3) for k, v in track.max_abs_deg.items()},
        "tracking_mean_abs_deg": {k: round(v, 3) for k, v in track.mean_abs_deg.items()},
        "tracking_max_step_deg": {k: round(v, 3) for k, v in track.max_step_deg.items()},
        "tracking_worst": list(track.worst_joint) if track.ticks else None,
    }


def _print(summary: dict[str, Any], console: Console) -> None:
    console.print(
        f"stopped by {summary['stopped_by']}: {summary['ticks']} ticks at {summary['achieved_hz']:.2f} Hz"
        f" ({summary['rate_error_percent']:+.3f}%), period deviation p99 {summary['period_deviation_p99_ms']:.2f} ms,"
        f" {summary['overruns']} overruns, {summary['missed_reads']} missed reads,"
        f" {summary['safety_events']} safety interventions"
    )
    if summary["tracking_worst"] is not None:
        joint, worst = summary["tracking_worst"]
        console.print(f"tracking: worst joint {joint} {worst:.2f} deg over {summary['tracking_ticks']} ticks")


if __name__ == "__main__":
    sys.exit(main())
