"""One controller at a time: the page that may start, stop and steer jobs; every other page watches.

A page is a browser tab, known by the session id in its cookie and the tab id it posts. The first
tab to ask gets control; any other sees everything read-only until it takes control over, which the
page asks a person to confirm (the holder's tab learns it lost control on its next poll). The e-stop
is no action of a controller: any open page may press it.

The controller's tab polls the studio while it is open. When no poll has come for `lapse_s` (the tab
was closed, the browser crashed, the network dropped), the lease lapses and the studio stops the job
that holds the rig the way Ctrl-C would: its safe stop (app.py). A reload or a brief drop reattaches
within `lapse_s` and changes nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Holder:
    """Who holds control: a tab of a browser session."""

    tab: str
    since_s: float  # monotonic


class ControlLease:
    """Which tab controls the studio, and whether it is still there."""

    def __init__(self, lapse_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.lapse_s = lapse_s
        self._clock = clock
        self._holder: Holder | None = None
        self._seen_s = 0.0
        self._lock = threading.Lock()

    def claim(self, tab: str, *, take_over: bool = False) -> bool:
        """Give `tab` control if nobody holds it (or the holder lapsed), or if it takes it over; whether it has it."""
        with self._lock:
            free = self._holder is None or self._lapsed()
            if free or take_over or self._holder.tab == tab:  # type: ignore[union-attr]
                if self._holder is None or self._holder.tab != tab:
                    self._holder = Holder(tab, self._clock())
                self._seen_s = self._clock()
            return self._holder.tab == tab

    def release(self, tab: str) -> None:
        """The holder hands control back (no one holds it until a tab claims it)."""
        with self._lock:
            if self._holder is not None and self._holder.tab == tab:
                self._holder = None

    def seen(self, tab: str) -> bool:
        """A poll from `tab`: keeps its lease alive if it holds control; whether it does."""
        with self._lock:
            if self._holder is not None and self._holder.tab == tab and not self._lapsed():
                self._seen_s = self._clock()
                return True
            return False

    def holds(self, tab: str) -> bool:
        """Whether `tab` holds control now."""
        with self._lock:
            return self._holder is not None and self._holder.tab == tab and not self._lapsed()

    def lapse(self) -> Holder | None:
        """The holder whose lease has just lapsed (cleared, so it is reported once), else None."""
        with self._lock:
            if self._holder is not None and self._lapsed():
                gone, self._holder = self._holder, None
                return gone
            return None

    @property
    def held(self) -> bool:
        """Whether any tab holds control now."""
        with self._lock:
            return self._holder is not None and not self._lapsed()

    def _lapsed(self) -> bool:
        return self._clock() - self._seen_s > self.lapse_s
