"""Keep the video encoder from ever out-ranking the control loop.

Run as root, SVT-AV1 asks for SCHED_FIFO priority 99 for every worker thread it creates (it checks
`geteuid() == 0`, then calls `pthread_setschedparam`). Those threads then preempt the 30 Hz loop:
LeRobot's loop fell to 15.2 Hz on our 2-core anchor machine. Giving up CAP_SYS_NICE
and the real-time rlimit makes that request fail, so the workers stay SCHED_OTHER; a positive
nice value then makes them yield to the loop whenever both want a core.

Linux capabilities and nice values are per thread and inherited by the threads a thread creates,
so `demote_this_process()` must run on the writer's main thread before any encoder starts.
"""

import ctypes
import logging
import os
import resource
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

CAP_SYS_NICE = 23  # linux/capability.h
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_LOWER = 3
_SCHED_POLICY_NAMES = {0: "SCHED_OTHER", 1: "SCHED_FIFO", 2: "SCHED_RR", 3: "SCHED_BATCH", 5: "SCHED_IDLE"}


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32))


@dataclass(frozen=True)
class Demotion:
    """What `demote_this_process` managed to do (each step is best effort, and logged if it fails)."""

    capability_dropped: bool  # CAP_SYS_NICE is gone from the effective, permitted and inheritable sets
    rtprio_limit_zero: bool  # RLIMIT_RTPRIO is 0, so no real-time policy without the capability
    nice: int  # the main thread's nice value afterwards


def demote_this_process(nice_increment: int) -> Demotion:
    """Leave real-time scheduling, renice every thread, drop CAP_SYS_NICE and the real-time rlimit.

    A process started from a SCHED_FIFO thread inherits SCHED_FIFO (a control loop may well run
    at real-time priority, and SVT-AV1 makes the thread that opens an encoder SCHED_FIFO 99 when
    it can), so every thread is first put back to SCHED_OTHER.

    Args:
        nice_increment: added to the nice value of every existing thread (and so inherited by
            the threads they create later); 0 leaves niceness alone.
    """
    _leave_real_time()
    if nice_increment:
        # Threads started at import (e.g. OpenBLAS's pool, created when numpy loads) do not inherit
        # a later renice of the main thread, so every thread is reniced; first, while still allowed.
        for tid in _thread_ids():
            try:
                os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + nice_increment)
            except OSError as error:
                logger.warning("could not renice thread %s: %s", tid, error)
    dropped = _drop_sys_nice()
    rtprio = _zero_rtprio_limit()
    return Demotion(dropped, rtprio, os.getpriority(os.PRIO_PROCESS, 0))


def _leave_real_time() -> None:
    for tid in _thread_ids():
        try:
            if os.sched_getscheduler(tid) in (os.SCHED_FIFO, os.SCHED_RR):
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        except OSError as error:
            logger.warning("could not make thread %s SCHED_OTHER: %s", tid, error)


def has_sys_nice() -> bool:
    """Whether the calling thread holds CAP_SYS_NICE in its effective set."""
    _, data = _capget()
    return bool(data[0].effective & (1 << CAP_SYS_NICE))


def thread_policies(pid: int) -> dict[int, str]:
    """Scheduling policy name of every thread of a process, by thread id (Linux /proc)."""
    policies = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        # Fields after the ")" that ends the command name; policy is field 41 (index 38 here).
        fields = stat.rsplit(")", 1)[1].split()
        policies[int(task.name)] = _SCHED_POLICY_NAMES.get(int(fields[38]), fields[38])
    return policies


def thread_nice_values(pid: int) -> dict[int, int]:
    """Nice value of every thread of a process, by thread id (Linux /proc, field 19)."""
    values = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        values[int(task.name)] = int(fields[16])
    return values


def _thread_ids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _capget() -> tuple[_CapHeader, ctypes.Array]:
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if _libc().capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    return header, data


def _drop_sys_nice() -> bool:
    libc = _libc()
    try:
        header, data = _capget()
    except (OSError, AttributeError) as error:
        logger.warning("cannot read capabilities (%s); encoder threads may get real-time priority as root", error)
        return False
    mask = ~(1 << CAP_SYS_NICE) & 0xFFFFFFFF
    data[0].effective &= mask
    data[0].permitted &= mask
    data[0].inheritable &= mask
    if libc.capset(ctypes.byref(header), data) != 0:
        logger.warning("capset failed (errno %d); encoder threads may get real-time priority", ctypes.get_errno())
        return False
    # The bounding and ambient sets only matter if this process ever execs; drop them too when allowed.
    libc.prctl(_PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0)
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_LOWER, CAP_SYS_NICE, 0, 0)
    return not has_sys_nice()


def _zero_rtprio_limit() -> bool:
    try:
        resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
    except (ValueError, OSError) as error:
        logger.warning("cannot lower RLIMIT_RTPRIO: %s", error)
        return False
    return True
