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
(torque kept on where the followers are) and exits at once. Exit status: see robot/cli.py.
"""

import json
import sys
from collections import Counter
from dataclasses import dataclass, field

from rich.console import Console

from robot.cli import parse_command, run_command
from robot.config import RigConfig
from robot.config_checks import reject_non_finite
from robot.control_loop import ControlLoop
from robot.errors import ConfigError
from robot.rig import BimanualRig, SafetyStopError
from robot.rig_ports import rig_ports
from robot.signals import StopSignals
from teleop.keys import Key, KeyReader
from teleop.leader_source import LeaderSource
from teleop.status_line import StatusLine
from teleop.tracking import TrackingHook

OPERATOR_CHOICES = ("cloth_fold", "idle")


@dataclass(frozen=True)
class TeleopConfig:
    """Options of so101-teleop (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    # Control rate, Hz, for this run only; default the rig file's `fps` (every consumer reads it from the rig)
    fps: int | None = None
    # Stop after this many seconds; 0 runs until Ctrl-C
    duration_s: float = 0.0
    # Virtual rig only: what the scripted operator's hands do on the leaders (cloth_fold or idle)
    virtual_operator: str = "cloth_fold"
    # Print a JSON summary instead of the status line and table
    json: bool = False

    def __post_init__(self) -> None:
        reject_non_finite(self, "")
        if self.duration_s < 0:
            raise ConfigError(f"duration_s={self.duration_s}: must be >= 0")
        if self.virtual_operator not in OPERATOR_CHOICES:
            raise ConfigError(f"virtual_operator={self.virtual_operator!r}: expected one of {OPERATOR_CHOICES}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-teleop."""
    stops = StopSignals()  # SIGINT, SIGTERM, SIGHUP: the loop stops at its next tick, then the safe exit

    def body() -> int:
        config = parse_command(TeleopConfig, argv)
        console = Console(stderr=config.json)
        with rig_ports(config.rig) as found:
            if found.control is not None and config.virtual_operator != "idle":
                with found.client() as client:
                    client.play(config.virtual_operator, loop=True)
            with stops.rig(BimanualRig(config.rig, found.ports)) as rig, KeyReader() as keys:
                source = LeaderSource(rig)
                tracking = TrackingHook(skip_ticks=config.rig.fps)  # judge tracking after a settling second
                tracking.active = False
                hints = "q stop  e e-stop  Ctrl-C stop safely" if keys.enabled else "Ctrl-C: stop safely"
                status = StatusLine(rig, console, hints=hints)
                loop: ControlLoop | None = None
                quit_key = False

                class EngageWatch:
                    def on_step(self, step: object) -> None:
                        nonlocal quit_key
                        for key in keys.poll():
                            if key is Key.ESTOP:
                                rig.freeze("e-stop")  # now; the next tick's act ends the loop
                            elif key is Key.STOP and loop is not None:
                                quit_key = True
                                loop.stop()
                        tracking.active = source.engaged
                        status.extra = "following" if source.engaged else "ramping to the leaders"

                hooks = [EngageWatch(), tracking] + ([] if config.json else [status])
                loop = ControlLoop(rig, source, hooks=hooks, realtime_priority=config.rig.realtime_priority)
                stopped_by = "duration" if config.duration_s else "Ctrl-C"
                try:
                    with stops.stopping(loop.stop):
                        if config.json:
                            stats = loop.run(config.duration_s or None)
                        else:
                            with status:
                                stats = loop.run(config.duration_s or None)
                except KeyboardInterrupt:  # Ctrl-C where the handlers could not be installed (not the main thread)
                    stats, stopped_by = loop.timer.stats(), "Ctrl-C"
                except SafetyStopError as e:
                    stats, stopped_by = loop.timer.stats(), str(e)
                if stops.reason is not None and (stops.escalated or not stopped_by.startswith("followers")):
                    stopped_by = stops.reason
                elif quit_key and stopped_by == "Ctrl-C":
                    stopped_by = "q"
                track = tracking.stats()
                summary = {
                    "stopped_by": stopped_by,
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
                }
            if found.control is not None:
                with found.client() as client:
                    client.stop()
        if config.json:
            print(json.dumps(summary, indent=2))
        else:
            console.print(
                f"stopped by {stopped_by}: {stats.ticks} ticks at {stats.achieved_hz:.2f} Hz"
                f" ({stats.rate_error * 100:+.3f}%), period deviation p99 {stats.period_deviation_p99_ms:.2f} ms,"
                f" {stats.overruns} overruns, {loop.missed_reads} missed reads,"
                f" {len(rig.counters.events)} safety interventions"
            )
            if track.ticks:
                joint, worst = track.worst_joint
                console.print(f"tracking: worst joint {joint} {worst:.2f} deg over {track.ticks} ticks")
        return 0 if not stopped_by.startswith("followers frozen") else 1

    return run_command(body, stops)


if __name__ == "__main__":
    sys.exit(main())
