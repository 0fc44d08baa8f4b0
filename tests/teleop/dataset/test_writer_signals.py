"""The writer process finishes a commit whatever happens to the recorder's process group, then exits."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from teleop.dataset.durable import DurableDataset
from teleop.dataset.faults import ENV
from tests.support.commands import process_state, wait_until
from tests.teleop.dataset.helpers import check_loads, spec

pytestmark = pytest.mark.slow  # starts a writer process (imports LeRobot: seconds)

SAVING_RECORDER = """
import sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from teleop.dataset.writer_process import DatasetWriter
from tests.teleop.dataset.helpers import TASK, frame, spec
writer = DatasetWriter(spec(Path({root!r})))
writer.open()
writer.begin_episode(TASK)
for index in range(6):
    writer.add_frame(*frame(2, index))
print(writer.pid, flush=True)
writer.save_episode({{"episode": 2}})  # the writer stops itself inside this commit
"""


def test_a_commit_outlives_the_recorders_group_signals_and_death(committed):
    root, _ = committed
    repo = str(Path(__file__).resolve().parents[3])
    recorder = subprocess.Popen(
        [sys.executable, "-c", SAVING_RECORDER.format(repo=repo, root=str(root))],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=os.environ | {ENV: "stop@save:journaled"},
    )
    try:
        writer = int(recorder.stdout.readline())
        wait_until(lambda: process_state(writer) == "T", 120, "the writer to stop inside the commit")
        assert os.getsid(writer) != os.getsid(recorder.pid)  # a session of its own: no terminal's signals
        for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
            os.killpg(recorder.pid, signum)  # the recorder's group: Ctrl-C, a hangup, systemd's stop...
            os.kill(writer, signum)  # ...and the writer itself: all ignored
        os.killpg(recorder.pid, signal.SIGKILL)  # then the recorder dies mid-save
        recorder.wait(timeout=30)
        os.kill(writer, signal.SIGCONT)
        wait_until(lambda: process_state(writer) in (None, "Z"), 120, "the orphaned writer to exit")
    finally:
        if recorder.poll() is None:
            recorder.kill()
            recorder.wait()
    with DurableDataset.open(spec(root)) as dataset:
        assert dataset.report.repair.rolled_back_episode is None  # the commit was finished, not rolled back
        assert dataset.report.episodes == 3
    check_loads(root, [5, 7, 6])
