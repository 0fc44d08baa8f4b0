"""How a virtual bus process gets a CPU the moment a request arrives, with or without privileges.

A stock SDK client (LeRobot's) waits 50 ms for each status packet while it busy-polls a core, and
LeRobot's calibration and connect write each register with no retry. A real bus answers in
under a millisecond whatever the host is doing; an emulated one answers only once the kernel runs
its process. Measured on the 2-core dev VM with a CPU hog, a niced hog and one client reading the
four buses at 30 Hz (notes in the issue's report): bus processes at ordinary priority in the
client's own scheduling group waited up to 110-180 ms for a CPU after their `select()` timed out,
in bursts that hit all four buses within 250 ms (3-18 client timeouts a minute); each in a group of
its own, their waits stayed under 50 ms (0-8 over 20 ms a minute, no client timeout).

So, in order:
1. SCHED_FIFO at the rig's `realtime_priority` when permitted (root, CAP_SYS_NICE, or an rtprio
   limit; a soft RLIMIT_RTPRIO below the hard one is raised first, as any process may do).
2. In every case its own session. With autogroup scheduling (Linux's default, `kernel.sched_autogroup_enabled`,
   for tasks outside a cpu cgroup) a session is a scheduling group: the bus process then competes
   as a group of its own, entitled to a fair share of the machine, instead of as one task among the
   busy-polling client, the test runner and whatever else the session that started it runs. It
   needs no privilege and costs nothing where autogroups are off. A side effect wanted anyway: a
   terminal's Ctrl-C reaches only the front process, which stops the buses with SIGTERM (they save
   their flash), instead of killing them mid-save.
"""

import logging
import os
import resource

from robot.realtime import make_realtime

logger = logging.getLogger(__name__)


def raise_rtprio_limit(priority: int) -> None:
    """Raise the soft RLIMIT_RTPRIO toward `priority`, as far as the hard limit allows (no privilege needed)."""
    if priority <= 0:
        return
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_RTPRIO)
        wanted = min(priority, 99) if hard == resource.RLIM_INFINITY else min(priority, 99, hard)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            resource.setrlimit(resource.RLIMIT_RTPRIO, (wanted, hard))
    except (AttributeError, ValueError, OSError) as e:  # not Linux, or a limit we may not touch
        logger.debug("cannot raise RLIMIT_RTPRIO: %s", e)


def own_session() -> bool:
    """Start a session (hence an autogroup) of this process's own; False if it already leads one."""
    try:
        os.setsid()
    except OSError:  # already a process-group leader: nothing to gain, nothing to break
        return False
    return True


def prioritise_bus_process(priority: int) -> str:
    """Give the calling (single-threaded) bus process the best scheduling it may have; says which.

    Returns a short description for logs: "SCHED_FIFO 9, own session", "own session" or "ordinary".
    """
    separate = own_session()
    raise_rtprio_limit(priority)
    granted = make_realtime(priority)
    parts = ([f"SCHED_FIFO {min(priority, 99)}"] if granted else []) + (["own session"] if separate else [])
    return ", ".join(parts) or "ordinary"
