"""Real-time scheduling for the control thread and the bus threads, when the system allows it.

A 30 Hz loop that sleeps most of the time loses its deadlines when another process (a video
encoder, a browser) keeps both cores busy: the kernel runs the loop late by a whole time slice.
With SCHED_FIFO the loop preempts ordinary work the moment its deadline comes, which is what
robot control stacks do. It needs root or an `rtprio` limit (e.g. `@audio - rtprio 20` in
/etc/security/limits.conf); without them the request fails and everything runs as before.

Only threads that sleep most of the time get it: the control loop waits on its deadline (at the
rig's priority), the bus threads in `select()` (one below, like the virtual rig's emulator: the
loop's wake-up preempts them), the camera capture threads for their next frame (one below too; a few
ms of work per frame). Encoding and inference stay ordinary (see the SVT-AV1 trap in
the notes: real-time encoder threads starve a loop). Camera threads must be real-time too because
of the GIL: an ordinary thread holding it, preempted by an encoder process, would make the woken
loop wait a whole time slice (15-18 ms measured) for the lock.
"""

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

logger = logging.getLogger(__name__)
_warned = False
REALTIME_SWITCH_INTERVAL_S = 0.001  # GIL hand-over bound while a real-time loop runs, seconds


def make_realtime(priority: int) -> bool:
    """Put the calling thread in SCHED_FIFO at `priority` (1..99); False if not permitted or off."""
    global _warned
    if priority <= 0 or not hasattr(os, "sched_setscheduler"):
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(min(priority, 99)))
    except (PermissionError, OSError) as e:
        if not _warned:
            _warned = True
            logger.info("real-time scheduling not permitted (%s); the loop runs at normal priority", e)
        return False
    return True


@contextmanager
def realtime_thread(priority: int) -> Iterator[bool]:
    """SCHED_FIFO for the calling thread inside the block, its old policy restored after.

    While granted, the interpreter's GIL switch interval drops to `REALTIME_SWITCH_INTERVAL_S`: a
    woken real-time thread waits that long at most for another Python thread to hand over the GIL
    (the default, 5 ms, would be a sixth of a 30 Hz period).
    """
    try:
        old_policy, old_param = os.sched_getscheduler(0), os.sched_getparam(0)
    except (AttributeError, OSError):
        yield False
        return
    granted = make_realtime(priority)
    old_interval = sys.getswitchinterval()
    if granted:
        sys.setswitchinterval(min(old_interval, REALTIME_SWITCH_INTERVAL_S))
    try:
        yield granted
    finally:
        if granted:
            sys.setswitchinterval(old_interval)
            os.sched_setscheduler(0, old_policy, old_param)


def ordinary_thread() -> None:
    """Put the calling thread back in ordinary scheduling (a thread inherits its creator's policy).

    For CPU-bound workers started from a real-time thread (policy inference): at SCHED_FIFO a
    0.3-5 s chunk would preempt the cameras, the dataset writer and the encoder, and the loop
    thread itself cannot time-slice against an equal-priority FIFO thread.
    """
    if not hasattr(os, "sched_getscheduler"):
        return
    try:
        if os.sched_getscheduler(0) != os.SCHED_OTHER:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except OSError as e:  # lowering one's own priority is always permitted; be safe anyway
        logger.warning("could not return a worker thread to ordinary scheduling: %s", e)


def lower_priority(priority: int) -> int:
    """The real-time priority one below `priority` (at least 1), or 0 (ordinary) when `priority` is 0.

    The rig's threads are ranked: the control loop at its priority; one below it, the bus threads,
    the camera threads and the virtual rig's emulator, so that the loop's wake-up preempts their
    work, and so that no thread the loop may wait for (a GIL holder) is itself held up by another.
    """
    return 0 if priority <= 0 else max(1, priority - 1)
