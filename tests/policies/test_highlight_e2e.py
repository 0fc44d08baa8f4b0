"""so101-deploy --mode=highlight: nothing is recorded until k, which keeps the last seconds and what follows.

The tiny ACT runs; the test presses k (once the status line says 2 s would be kept), waits a second,
and presses k again. The one episode saved starts 2 s before the first k (the remembered ticks, on
the same monotonic clock as this test's) and runs on, tick after tick, to the second, every frame
handed to the writer (none dropped for want of a ring slot).
"""

import json
import re
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.support.commands import ForegroundJob
from tests.support.record_runs import rig_file
from tests.support.terminal_keys import plain, press

pytestmark = pytest.mark.slow
REPO = "test/highlight"
KEEP_S = 2.0


def test_k_keeps_the_last_seconds_and_what_follows_until_k_again(tmp_path: Path, tiny_act_dir: Path):
    root = tmp_path / "eval"
    args = [
        f"--config_path={rig_file(tmp_path)}",
        f"--policy.path={tiny_act_dir}",
        "--policy.device=cpu",
        f"--dataset.repo_id={REPO}",
        f"--dataset.root={root}",
        "--dataset.vcodec=h264",
        "--mode=highlight",
        f"--highlight.keep_s={KEEP_S}",
        "--session.episode_s=30",
    ]
    with ForegroundJob("so101-deploy", *args, terminal=True) as job:
        job.wait_until(lambda: f"k keeps {KEEP_S:.0f} s" in plain(job.text), 180, "a full pre-roll")
        time.sleep(1.0)  # the status rounds: "2 s" shows from 1.5 s on
        assert not (root / "meta" / "so101" / "episodes").exists(), "a highlight was recorded before k"
        pressed_s = time.monotonic()
        press(job, "k")
        job.wait_until(lambda: re.search(r"episode 1/\d+ REC", plain(job.text)) is not None, 60, "the highlight")
        time.sleep(1.0)
        press(job, "k")
        job.wait_until(
            lambda: (root / "meta" / "so101" / "episodes" / "episode-000000" / "quality.json").exists(),
            120,
            "the highlight's save",
        )
        press(job, "q")
        code = job.finish()
        assert code == 0, plain(job.text)[-3000:]
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset = LeRobotDataset(REPO, root=root, video_backend="pyav")
    assert dataset.meta.total_episodes == 1, "q with no highlight under way records nothing more"
    folder = root / "meta" / "so101" / "episodes" / "episode-000000"
    timing = pq.read_table(folder / "timing.parquet").to_pydict()
    starts = np.array(timing["tick_start_s"])
    assert abs(starts[0] - (pressed_s - KEEP_S)) <= 0.3, f"it starts {pressed_s - starts[0]:.2f} s before k"
    # Every loop tick from the first to the last is a frame: consecutive deadlines are one period apart,
    # or more only where the loop itself skipped deadlines (a busy machine), which each frame says.
    periods = np.round(np.diff(np.array(timing["tick_deadline_s"])) * 30).astype(int)
    skipped = np.array(timing["ticks_skipped"], dtype=int)[1:]
    assert (periods == 1 + skipped).all(), "a tick missing between the remembered ticks and the live ones"
    assert starts[-1] - pressed_s >= 0.9, "the ticks after k are kept too"
    card = json.loads((folder / "quality.json").read_text())
    assert card["writer_dropped"] == 0
    assert card["frames"] == len(starts) == dataset.meta.total_frames
    assert dataset[len(dataset) - 1]["observation.state"].shape == (12,)
