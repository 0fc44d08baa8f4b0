"""The session benchmark's readings of a recorder: its processes without the emulator's, and the growth figure."""

import os
import subprocess
import sys

from benchmarks.record_session import growth
from benchmarks.session_facts import EMULATOR, recorder_pids, tree_facts

SLEEPER = "import time; time.sleep(30)"


def test_the_emulator_and_its_children_are_not_the_recorders():
    # A child whose command line names the emulator module, and an ordinary one.
    emulator = subprocess.Popen([sys.executable, "-c", f"{SLEEPER}  # {EMULATOR}"])
    helper = subprocess.Popen([sys.executable, "-c", SLEEPER])
    try:
        pids = recorder_pids(os.getpid())
        assert helper.pid in pids
        assert emulator.pid not in pids
        facts = tree_facts(os.getpid())
        assert facts.processes == len(pids)
        assert facts.threads >= len(pids)
        assert facts.open_files >= 3 * len(pids)  # stdin, stdout, stderr each at least
        assert facts.pss_mb > 0
    finally:
        for child in (emulator, helper):
            child.kill()
            child.wait()


def test_growth_is_measured_from_episode_5_with_its_slope():
    episodes = [{"episode": i, "pss_mb": 1000.0 + (10.0 * (i - 4) if i >= 4 else 50.0)} for i in range(10)]
    assert growth(episodes) == {"pss_growth_pct": 5.0, "slope_mb_per_episode": 10.0}
    assert growth(episodes[:5]) == {"pss_growth_pct": None, "slope_mb_per_episode": None}  # no span to measure
