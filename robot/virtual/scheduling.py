"""How a virtual bus process gets a CPU the moment a request arrives, with or without privileges.

A stock SDK client (LeRobot's) waits 50 ms for each status packet while it busy-polls a core, and
LeRobot's connect, calibration and disconnect write registers with few or no retries. A real bus
answers in under a millisecond whatever the host is doing; an emulated one answers only once the
kernel runs its process. Measured with a throwaway probe on the 2-core dev VM without CAP_SYS_NICE
(a CPU hog, a niced hog, one client process reading the four buses at 30 Hz with LeRobot's 50 ms
timeout, 60 s a run): bus processes at ordinary priority in the client's own session woke up to
110-180 ms late, in bursts that hit all four buses within 250 ms (23-587 wake-ups over 20 ms late
and 0-18 client timeouts a run); each in a session of its own, 0-8 over 20 ms and no timeout. Other
work on the machine (another test suite) still stalled every process at once by ~100 ms now and
then: only real-time scheduling wins against that.

So, in order:
1. SCHED_FIFO at the rig's `realtime_priority` when permitted (root, CAP_SYS_NICE, or an rtprio
   limit; a soft RLIMIT_RTPRIO below the hard one is raised first, as any process may do).
2. In every case its own session. With autogroup scheduling (`kernel.sched_autogroup_enabled`,
   on by default in most kernels, for tasks outside a cpu cgroup) a session is a scheduling group:
   the bus process then competes as a group of its own, entitled to a fair share of the machine,
   instead of as one task among the busy-polling client, the test runner and whatever else the
   session that started it runs. It needs no privilege and costs nothing where autogroups are off.
   A side effect wanted anyway: a terminal's Ctrl-C reaches only the front process, which stops the
   buses with SIGTERM (they save their flash), instead of killing them mid-save.
"""

import logging
import os
import resource

from robot.realtime import make_realtime, ordinary_thread

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
    if not granted:
        ordinary_thread()  # never a real-time policy it was not given (a fork inherits its parent's)
    parts = ([f"SCHED_FIFO {min(priority, 99)}"] if granted else []) + (["own session"] if separate else [])
    return ", ".join(parts) or "ordinary"
