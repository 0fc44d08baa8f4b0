"""The dataset studio at scale: so101-review's pages and so101-edit on datasets of 50 and 500 episodes.

    synthesise   each size with LeRobot's writer (evaluation/testing/synthetic_dataset.py: scripted
                 bimanual motion, three tiny h264 cameras), untimed
    per size, in a child process of its own (a clean peak RSS):
        list       GET /         the episodes list as a person first opens it (fingerprints, cards)
        episode    GET /episodes/{middle} and its /timeline (the traces under the videos)
        filter     GET /?verdict=keep&min_idle=10
        health     GET /health.json  the whole dataset's checks (timestamps, stats, videos, duplicates, ranges)
        edit       so101-edit --drop=0 (LeRobot's delete_episodes, sidecars carried, journal written)
        peak RSS   of that child, after all of the above
    growth = seconds at 500 / seconds at 50, against 10 (the episodes' own growth): a ratio at or
    under 10 means the cost grows no faster than the episodes do

A measurement, not a test: nothing is asserted. The page is served in-process through FastAPI's
test client, so the times are the app's own, without a browser.

    .venv/bin/python -m benchmarks.studio_scale                 # 50 and 500 episodes (~5 min on 2 cores)
    .venv/bin/python -m benchmarks.studio_scale --quick         # 5 and 50 episodes, smoke run
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FRAMES = 30  # one second per episode at 30 fps: the studio's costs are per episode, not per frame


def measure(root: Path, workdir: Path) -> dict[str, float]:
    """Seconds for each studio step on the dataset at `root`, and the peak RSS (MB) after them."""
    from fastapi.testclient import TestClient

    from evaluation.episode_source import open_dataset
    from evaluation.overrides import OverrideStore
    from evaluation.review.app import ReviewSettings, create_app
    from evaluation.review.catalog import ReviewCatalog
    from evaluation.review.config import AuditConfig
    from evaluation.store import EvaluationStore
    from teleop.commands.edit import main as edit

    out: dict[str, float] = {}
    with EvaluationStore(workdir / "store.sqlite") as store, OverrideStore(store) as overrides:
        start = time.perf_counter()
        source = open_dataset(root)
        catalog = ReviewCatalog(source, store, AuditConfig())
        client = TestClient(create_app(catalog, overrides, ReviewSettings(reviewer="bench", check_host=False)))
        assert client.get("/").status_code == 200
        out["list_s"] = time.perf_counter() - start
        middle = len(source.episodes) // 2
        start = time.perf_counter()
        assert client.get(f"/episodes/{middle}").status_code == 200
        assert client.get(f"/episodes/{middle}/timeline").status_code == 200
        out["episode_s"] = time.perf_counter() - start
        start = time.perf_counter()
        assert client.get("/?verdict=keep&min_idle=10").status_code == 200
        out["filter_s"] = time.perf_counter() - start
        start = time.perf_counter()
        assert client.get("/health.json").status_code == 200
        out["health_s"] = time.perf_counter() - start
    start = time.perf_counter()
    code = edit([f"--dataset.root={root}", "--drop=0", f"--new_dataset.root={workdir / 'curated'}"])
    out["edit_s"] = time.perf_counter() - start
    out["edit_exit"] = code
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def synthesise(root: Path, episodes: int) -> None:
    from evaluation.testing.synthetic_dataset import Scenario, write_synthetic_dataset

    kinds = list(Scenario)
    write_synthetic_dataset(
        root, [kinds[i % len(kinds)] for i in range(episodes)], frames_per_episode=FRAMES, height=24, width=32
    )


def child(episodes: int, workdir: Path) -> dict[str, float]:
    """Synthesise and measure one size in a child process (its own peak RSS)."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.studio_scale", "--child", str(episodes), "--workdir", str(workdir)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{episodes} episodes: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 and 50 episodes")
    parser.add_argument("--out", default="outputs/bench/studio_scale.json")
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        workdir = Path(args.workdir)
        root = workdir / "dataset"
        synthesise(root, args.child)
        print(json.dumps(measure(root, workdir)))
        return 0
    small, large = (5, 50) if args.quick else (50, 500)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for episodes in (small, large):
            workdir = Path(tmp) / str(episodes)
            workdir.mkdir()
            results[episodes] = child(episodes, workdir)
            print(f"{episodes} episodes: " + ", ".join(f"{k} {v:.3g}" for k, v in results[episodes].items()))
    scale = large / small
    summary = []
    for step in ("list_s", "episode_s", "filter_s", "health_s", "edit_s", "peak_rss_mb"):
        growth = results[large][step] / results[small][step]
        summary.append(
            {
                "benchmark": "studio_scale",
                "metric": f"{step} growth, {large} vs {small} episodes",
                "unit": "x",
                "ours": round(growth, 2),
                "anchor": scale,
                "anchor_name": f"the episodes' growth ({scale:g}x)",
                "higher_is_better": False,
                "target": f"<= {scale:g}x",
            }
        )
    record = {"sizes": {str(k): v for k, v in results.items()}, "summary": summary}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=1))
    for row in summary:
        print(f"{row['metric']}: {row['ours']}x (the episodes grew {scale:g}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
