"""The writer process can never out-rank the control loop, even as root (the SVT-AV1 SCHED_FIFO trap)."""

import multiprocessing
import os
import subprocess
import sys
import time
from collections import Counter

import pytest

from teleop.dataset.privileges import demote_this_process, has_sys_nice, thread_nice_values, thread_policies
from teleop.dataset.writer_process import DatasetWriter
from tests.teleop.dataset.helpers import TASK, frame, spec

pytestmark = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")

# What SVT-AV1 does when nothing stops it: encode a few AV1 frames, report the threads' policies.
SVT_PROBE = """
import collections, os, sys
import av, numpy as np
sys.path.insert(0, {root!r})
from teleop.dataset.privileges import demote_this_process, thread_policies
if {demote}:
    demote_this_process(5)
container = av.open(os.devnull, "w", format="mp4")
stream = container.add_stream("libsvtav1", 30)
stream.width, stream.height, stream.pix_fmt = 128, 96, "yuv420p"
for index in range(3):
    picture = av.VideoFrame.from_ndarray(np.zeros((96, 128, 3), np.uint8), format="rgb24")
    picture.pts = index
    stream.encode(picture)
print(dict(collections.Counter(thread_policies(os.getpid()).values())))
"""


def svt_thread_policies(demote: bool) -> Counter:
    """Thread policies of a fresh process encoding AV1 with or without our demotion."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    script = SVT_PROBE.format(root=root, demote=demote)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    return Counter(eval(result.stdout.strip().splitlines()[-1]))  # a dict literal printed by the probe


def _demote_and_report(results) -> None:
    if os.geteuid() == 0:  # as if started from a real-time control thread: FIFO is inherited
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    demotion = demote_this_process(5)
    policy = os.sched_getscheduler(0)
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        fifo = "allowed"
    except PermissionError:
        fifo = "refused"
    results.put((demotion, policy, has_sys_nice(), fifo, os.getpriority(os.PRIO_PROCESS, 0)))


def test_demotion_drops_the_capability_and_real_time_priority():
    before = os.getpriority(os.PRIO_PROCESS, 0)
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    child = context.Process(target=_demote_and_report, args=(results,))
    child.start()
    demotion, policy, nice_capable, fifo, nice = results.get(timeout=30)
    child.join()
    assert policy == os.SCHED_OTHER
    assert demotion.rtprio_limit_zero
    assert not nice_capable
    assert fifo == "refused"
    assert nice == min(before + 5, 19)
    if os.geteuid() == 0:
        assert demotion.capability_dropped


@pytest.mark.slow
def test_encoder_threads_of_the_writer_are_never_real_time_as_root(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("SVT-AV1 only asks for real-time priority as root")
    undemoted = svt_thread_policies(demote=False)
    if undemoted["SCHED_FIFO"] == 0:
        pytest.skip(f"SVT-AV1 gets no real-time priority here even undemoted ({dict(undemoted)}): nothing to show")
    assert svt_thread_policies(demote=True)["SCHED_FIFO"] == 0

    with DatasetWriter(spec(tmp_path / "ds", vcodec="libsvtav1")) as writer:
        assert writer.demotion.capability_dropped
        writer.begin_episode(TASK)
        for index in range(4):
            writer.add_frame(*frame(0, index))
        policies: dict[int, str] = {}
        for _ in range(600):  # the encoders start their thread pools on the first frame
            policies = thread_policies(writer.pid)
            if len(policies) > 20:
                break
            time.sleep(0.05)
        assert len(policies) > 20, f"the AV1 encoders never started: {len(policies)} threads"
        assert set(policies.values()) == {"SCHED_OTHER"}
        assert min(thread_nice_values(writer.pid).values()) >= 5
        assert writer.save_episode({}).encoder_dropped_frames == 0
