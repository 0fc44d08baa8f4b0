"""The live status line of a session: rate, period error, bus time, skew, temperatures, keys."""

import itertools
import time
from collections import deque

from rich.console import Console
from rich.live import Live
from rich.text import Text

from robot.control_loop import Step
from robot.rig import BimanualRig

REFRESH_S = 0.25
WINDOW_TICKS = 60


class StatusLine:
    """A step hook that redraws one line a few times a second (off the hot path otherwise)."""

    def __init__(self, rig: BimanualRig, console: Console, *, hints: str = "Ctrl-C: stop safely") -> None:
        self.rig = rig
        self.period_s = 1.0 / rig.config.fps  # the target the line compares each tick's period with
        self.hints = hints
        self.extra = ""
        self._console = console
        self._live = Live(console=console, auto_refresh=False, transient=False)
        self._starts: deque[float] = deque(maxlen=WINDOW_TICKS)
        self._bus_ms: deque[float] = deque(maxlen=WINDOW_TICKS)
        self._next_draw = 0.0
        self._t0: float | None = None

    def __enter__(self) -> "StatusLine":
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(None, None, None)
        self._console.print()  # what follows starts on its own line

    def on_step(self, step: Step) -> None:
        """Collect timing; redraw at most every REFRESH_S."""
        now = step.tick.start_s
        self._t0 = now if self._t0 is None else self._t0
        self._starts.append(now)
        self._bus_ms.append(step.observation.bus_time_s * 1000)
        if now < self._next_draw:
            return
        self._next_draw = now + REFRESH_S
        self._live.update(self.render(step), refresh=True)

    def render(self, step: Step) -> Text:
        """The line for the current state."""
        starts = list(self._starts)
        span = starts[-1] - starts[0] if len(starts) > 1 else 0.0
        rate = (len(starts) - 1) / span if span > 0 else 0.0
        periods = [b - a for a, b in itertools.pairwise(starts)]
        worst_ms = max((abs(p - self.period_s) * 1000 for p in periods), default=0.0)
        temps = [a.last_health.max_temperature_c for a in self.rig.arms.values() if a.last_health]
        decision = self.rig.last_decision
        text = Text()
        text.append(f"{now_s(self._t0):6.1f} s  ", style="bold")
        rate_error = (rate * self.period_s - 1) * 100 if rate else 0.0
        text.append(f"{rate:5.1f} Hz ({rate_error:+.2f}%)  period err max {worst_ms:4.1f} ms  ")
        text.append(f"bus {sum(self._bus_ms) / len(self._bus_ms):4.1f} ms  ")
        skew_ms = getattr(step.observation.frames, "skew_s", None)
        if skew_ms is not None:
            text.append(f"camera skew {skew_ms * 1000:4.1f} ms  ")
        if temps:
            text.append(f"motors <= {max(temps):.0f} C  ")
        if decision.verdict:
            text.append(f"{decision.verdict.name}: {decision.reason}  ", style="bold yellow")
        if self.extra:
            text.append(self.extra + "  ")
        text.append(self.hints, style="dim")
        return text


def now_s(t0: float | None) -> float:
    """Seconds since `t0` (0 before the first step)."""
    return 0.0 if t0 is None else time.monotonic() - t0
