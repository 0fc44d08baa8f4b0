"""Every virtual bus process gets the scheduling that keeps it answering on a busy host."""

import multiprocessing
import os
import resource
from pathlib import Path

import pytest

from robot.config import RigConfig
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.launcher import VirtualRigProcess
from robot.virtual.scheduling import prioritise_bus_process, raise_rtprio_limit


def _in_a_child(target, *args):
    """Run `target(queue, *args)` in a forked child (scheduling and limits stay out of pytest) and return its report."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=target, args=(queue, *args))
    child.start()
    report = queue.get(timeout=30)
    child.join(timeout=30)
    return report


def _fifo_permitted(queue) -> None:
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except PermissionError:
        queue.put(False)
    else:
        queue.put(True)


def _prioritise(queue, priority: int) -> None:
    described = prioritise_bus_process(priority)
    queue.put((described, os.getsid(0) == os.getpid(), os.sched_getscheduler(0)))


def bus_processes(server: int) -> list[int]:
    """The server's children: one process per bus."""
    found = []
    for children in Path(f"/proc/{server}/task").glob("*/children"):
        found += [int(child) for child in children.read_text().split()]
    return found


def test_a_bus_process_leads_a_session_of_its_own_at_any_priority():
    described, leads_session, policy = _in_a_child(_prioritise, 0)
    assert leads_session  # its own scheduling group where autogroups are on
    assert policy == os.SCHED_OTHER  # realtime_priority 0: never real-time
    assert described == "own session"


def test_a_bus_process_is_real_time_exactly_where_that_is_permitted():
    described, _, policy = _in_a_child(_prioritise, 9)
    if _in_a_child(_fifo_permitted):
        assert (policy, described) == (os.SCHED_FIFO, "SCHED_FIFO 9, own session")
    else:
        assert (policy, described) == (os.SCHED_OTHER, "own session")


@pytest.mark.parametrize(("hard", "soft_after"), [(5, 5), (20, 9), (0, 0), (resource.RLIM_INFINITY, 9)])
def test_the_soft_rtprio_limit_is_raised_as_far_as_the_hard_one_allows(monkeypatch, hard, soft_after):
    # Limits on a fake: raising a hard limit to set the scene would need CAP_SYS_RESOURCE.
    limits = {resource.RLIMIT_RTPRIO: (0, hard)}
    monkeypatch.setattr(resource, "getrlimit", limits.__getitem__)
    monkeypatch.setattr(resource, "setrlimit", limits.__setitem__)
    raise_rtprio_limit(9)
    assert limits[resource.RLIMIT_RTPRIO] == (soft_after, hard)


@pytest.mark.slow  # a child process per bus
def test_every_bus_of_a_running_rig_gets_it(tmp_path):
    config = VirtualRigConfig(runtime_dir=tmp_path / "run", timing=TimingMode.INSTANT, realtime_priority=9)
    fifo = _in_a_child(_fifo_permitted)
    with VirtualRigProcess(config) as rig:
        buses = bus_processes(rig.pid)
        assert len(buses) == 4
        for pid in buses:
            assert os.getsid(pid) == pid
            assert os.sched_getscheduler(pid) == (os.SCHED_FIFO if fifo else os.SCHED_OTHER)


@pytest.mark.slow  # a child process per bus
def test_by_default_the_emulated_buses_outrank_every_thread_of_the_rig(tmp_path):
    # Real buses answer whatever the host does; at normal priority a busy machine silenced the emulated
    # ones for 200 ms. By default they rank above the rig's loop, and so above its bus and camera threads.
    config = VirtualRigConfig(runtime_dir=tmp_path / "run", timing=TimingMode.INSTANT)
    assert config.realtime_priority > RigConfig(virtual=config).realtime_priority
    if not _in_a_child(_fifo_permitted):
        pytest.skip("SCHED_FIFO is not permitted here")
    with VirtualRigProcess(config) as rig:
        priorities = [os.sched_getparam(pid).sched_priority for pid in bus_processes(rig.pid)]
    assert priorities == [config.realtime_priority] * 4
