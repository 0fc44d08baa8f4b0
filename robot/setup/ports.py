"""Which serial port is which arm: by plugging an adapter in or out, or by moving an arm.

    find_by_replug(arm, listing, cue)        # the port that appeared or vanished while the person
                                             # plugged/pulled that arm's USB cable (lerobot-find-port's way)
    identify_by_motion(arm, readers, cue)    # every adapter plugged in: the port whose joints moved
                                             # while the person moved that arm

Ports are named by their stable /dev/serial/by-id/ link where the kernel made one: /dev/ttyACM<n>
numbers follow the order adapters were plugged in and change across reboots, so a rig file written
with them silently swaps arms one day.
"""

import os
import time
from collections.abc import Callable
from pathlib import Path

from robot.errors import ConfigError

POLL_S = 0.05
MOVED_STEPS = 60  # a joint moved by hand: more than hand tremor or a servo's noise (a few steps)


class PortDiscoveryError(ConfigError):
    """A port could not be told apart; nothing was written."""


def list_serial_ports(dev: Path = Path("/dev")) -> set[str]:
    """USB serial ports: their /dev/serial/by-id links, and tty nodes that have none."""
    by_id = dev / "serial" / "by-id"
    links = sorted(by_id.iterdir()) if by_id.is_dir() else []
    named = {os.path.realpath(link): str(link) for link in links}
    nodes = sorted([*dev.glob("ttyACM*"), *dev.glob("ttyUSB*")])
    return set(named.values()) | {str(node) for node in nodes if os.path.realpath(node) not in named}


def _changed(before: set[str], listing: Callable[[], set[str]], timeout_s: float) -> tuple[set[str], set[str]]:
    deadline = time.monotonic() + timeout_s
    while True:
        after = listing()
        if after != before or time.monotonic() >= deadline:
            return after - before, before - after
        time.sleep(POLL_S)


def find_by_replug(
    arm: str, listing: Callable[[], set[str]], cue: Callable[[str], None], timeout_s: float = 10.0
) -> str:
    """The port of `arm`: the one that appeared (or vanished) after `cue(arm)` asked for its cable.

    A vanished port is waited for until it is back (the cue is given again), so the port is in
    use afterwards as before.

    Raises:
        PortDiscoveryError: nothing changed, or more than one port did.
    """
    before = listing()
    cue(arm)
    appeared, vanished = _changed(before, listing, timeout_s)
    changes = appeared | vanished
    if not changes:
        raise PortDiscoveryError(
            f"{arm}: no serial port appeared or vanished within {timeout_s:.0f} s. Next: check that the {arm}'s"
            " USB cable goes into this computer (a hub needs power), then run so101-ports again"
        )
    if len(changes) > 1:
        raise PortDiscoveryError(
            f"{arm}: {len(changes)} ports changed at once ({', '.join(sorted(changes))}). Next: plug or pull one"
            " cable at a time, then run so101-ports again"
        )
    (port,) = changes
    if vanished:
        cue(arm)  # plug it back in
        back, _ = _changed(listing(), listing, timeout_s)
        if port not in back and port not in listing():
            raise PortDiscoveryError(
                f"{arm}: {port} vanished and did not come back. Next: plug the {arm}'s cable in again,"
                " then run so101-ports again"
            )
    return port


def identify_by_motion(
    arm: str,
    readers: dict[str, Callable[[], dict[str, int]]],
    cue: Callable[[str], None],
    timeout_s: float = 10.0,
) -> str:
    """The port whose joints moved (by more than MOVED_STEPS) after `cue(arm)` asked the person to move `arm`.

    `readers` reads each candidate port's raw joint positions.

    Raises:
        PortDiscoveryError: no port moved, or more than one did.
    """
    start = {port: read() for port, read in readers.items()}
    cue(arm)
    deadline = time.monotonic() + timeout_s
    moved: set[str] = set()
    while not moved and time.monotonic() < deadline:
        time.sleep(POLL_S)
        for port, read in readers.items():
            now = read()
            if max(abs(now[j] - start[port][j]) for j in now) > MOVED_STEPS:
                moved.add(port)
    if not moved:
        raise PortDiscoveryError(
            f"{arm}: no arm moved within {timeout_s:.0f} s. Next: move one joint of the {arm} by a few"
            " centimetres when asked, then run so101-ports --method=motion again"
        )
    if len(moved) > 1:
        raise PortDiscoveryError(
            f"{arm}: arms on {', '.join(sorted(moved))} moved together. Next: move only the {arm}, then run"
            " so101-ports --method=motion again"
        )
    return moved.pop()
