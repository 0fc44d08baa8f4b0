"""Judge benchmark: episodes per minute versus concurrency, and input tokens per 30 s episode.

    .venv/bin/python -m benchmarks.judge_bench            # full run (~2 min on 2 cores)
    .venv/bin/python -m benchmarks.judge_bench --quick    # smaller, for a smoke check

1. Throughput: the real pipeline (decode, JPEG, prompt, the anthropic SDK, SQLite) against the loopback
   Messages API answering after a fixed latency, for several concurrency levels. The anchor is the
   ideal rate with zero local overhead, concurrency x 60 / (samples x latency), measured in the same run.
2. Tokens: input tokens of one judge call on a 30 s, 480x640, three-view episode, estimated before
   sending and as reported by the server, against the naive baseline of all three views at 1 fps.
   Target: <= 10k input tokens per call and >= 3.5x fewer than the baseline.

Prints Markdown tables and writes JSON (default outputs/bench/judge_bench.json) with the load average.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from evaluation.episode_source import open_dataset
from evaluation.judge.anthropic_client import AnthropicJudgeClient, RetryPolicy, make_sdk_client
from evaluation.judge.config import DatasetConfig, JudgeCommandConfig, JudgeModelConfig, RunConfig
from evaluation.judge.cost import estimate_call
from evaluation.judge.episode_prep import PreparedEpisode, build_request, evidence_packs, prepare_episode
from evaluation.judge.evidence import EvidenceImage, EvidencePack, frame_ref
from evaluation.judge.run import run_judge
from evaluation.rubric import load_rubric
from evaluation.store import EvaluationStore
from evaluation.testing.fake_messages_server import FakeMessagesServer
from evaluation.testing.synthetic_dataset import Scenario, write_synthetic_dataset

EPISODE_FRAMES = 90  # 3 s episodes for the throughput part


def _quiet() -> None:
    """Silence the encoder's and the datasets library's chatter (benchmark output is the tables)."""
    import av.logging
    import datasets

    av.logging.set_level(av.logging.ERROR)
    datasets.disable_progress_bars()


def _config(root: Path, store: Path, samples: int, concurrency: int) -> JudgeCommandConfig:
    return JudgeCommandConfig(
        dataset=DatasetConfig(root=root),
        judge=JudgeModelConfig(samples=samples, retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.01)),
        run=RunConfig(concurrency=concurrency),
        store_path=store,
    )


def throughput(work: Path, episodes: int, samples: int, latency_s: float, levels: list[int]) -> list[dict]:
    """Episodes per minute for each concurrency level (fresh store each time)."""
    scenarios = [Scenario.FOLD_AND_PUSH, Scenario.FOLD_NO_PUSH, Scenario.GRASP_ONLY, Scenario.IDLE] * episodes
    root = write_synthetic_dataset(work / "throughput", scenarios[:episodes], EPISODE_FRAMES, 480, 640)
    source, rubric = open_dataset(root), load_rubric()
    rows = []
    with FakeMessagesServer(latency_s=latency_s) as server:
        client = AnthropicJudgeClient(make_sdk_client("bench", server.base_url, 60.0), RetryPolicy(max_attempts=2))
        for level in levels:
            store_path = work / f"store_c{level}.sqlite"
            with EvaluationStore(store_path) as store:
                start = time.monotonic()
                summary = run_judge(source, rubric, _config(root, store_path, samples, level), store, client)
                wall = time.monotonic() - start
            waves = math.ceil(episodes / level)  # episodes run `level` at a time, samples one after another
            ideal = episodes * 60.0 / (waves * samples * latency_s)
            rate = summary.scored * 60.0 / wall
            rows.append(
                {
                    "concurrency": level,
                    "episodes": summary.scored,
                    "calls": summary.calls,
                    "wall_s": round(wall, 2),
                    "episodes_per_min": round(rate, 1),
                    "ideal_episodes_per_min": round(ideal, 1),
                    "efficiency": round(rate / ideal, 3),
                }
            )
    return rows


def _baseline_pack(prepared: PreparedEpisode, fps_sent: float = 1.0) -> EvidencePack:
    """All three views at `fps_sent` frames per second (the naive baseline), sizes only."""
    ep = prepared.episode
    step = round(ep.fps / fps_sent)
    images = []
    for frame in range(0, ep.length, step):
        for seg in ep.videos:
            t = frame / ep.fps
            images.append(
                EvidenceImage(
                    frame_ref(seg.view, t),
                    seg.view,
                    frame,
                    t,
                    "uniform 1 fps",
                    str(seg.path),
                    t,
                    t,
                    seg.width,
                    seg.height,
                    b"",
                    "",
                )
            )
    return EvidencePack(ep.index, 0, tuple(images))


def tokens(work: Path, duration_s: float) -> dict:
    """Input tokens per call on one 480x640 episode of `duration_s`, ours vs the 3-view 1 fps baseline."""
    root = write_synthetic_dataset(work / "tokens", [Scenario.FOLD_AND_PUSH], round(duration_s * 30), 480, 640)
    source, rubric = open_dataset(root), load_rubric()
    config = _config(root, work / "tokens.sqlite", samples=5, concurrency=1)
    prepared = prepare_episode(source, source.episode(0), rubric, config, samples=5)
    packs = evidence_packs(source, prepared, config.frames.jpeg_quality)
    estimates = [estimate_call(build_request(rubric, prepared, p, config)[0], p, 0) for p in packs]
    with FakeMessagesServer() as server:
        client = AnthropicJudgeClient(make_sdk_client("bench", server.base_url, 60.0), RetryPolicy(max_attempts=2))
        reply = client.complete(build_request(rubric, prepared, packs[0], config)[1])
    baseline_pack = _baseline_pack(prepared)
    baseline = estimate_call(build_request(rubric, prepared, baseline_pack, config)[0], baseline_pack, 0)
    ours = estimates[0]
    return {
        "episode_s": duration_s,
        "resolution": "640x480",
        "ours_images": ours.images,
        "ours_input_tokens_estimated": ours.input_tokens,
        "ours_input_tokens_reported": reply.usage.total_input_tokens,
        "ours_input_tokens_mean_over_5_samples": round(sum(e.input_tokens for e in estimates) / len(estimates)),
        "baseline_images": baseline.images,
        "baseline_input_tokens_estimated": baseline.input_tokens,
        "reduction_x": round(baseline.input_tokens / ours.input_tokens, 2),
        "target_met": ours.input_tokens <= 10_000 and baseline.input_tokens / ours.input_tokens >= 3.5,
    }


def main() -> int:
    """Run both measurements, print Markdown, write JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer episodes and levels")
    parser.add_argument("--latency_s", type=float, default=0.5, help="fixed server latency per request, seconds")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/judge_bench.json"), help="JSON output")
    args = parser.parse_args()
    episodes, levels = (4, [1, 4]) if args.quick else (32, [1, 2, 4, 8, 16])
    _quiet()
    with tempfile.TemporaryDirectory(prefix="judge-bench-") as tmp:
        work = Path(tmp)
        rows = throughput(work, episodes, samples=3, latency_s=args.latency_s, levels=levels)
        tok = tokens(work, duration_s=30.0)
    print(
        f"## Judge throughput ({episodes} episodes of {EPISODE_FRAMES / 30:.0f} s at 640x480, 3 samples each, "
        f"server latency {args.latency_s} s per request)\n"
    )
    print("| concurrency | episodes/min | ideal (no local overhead) | efficiency | calls | wall s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['concurrency']} | {r['episodes_per_min']} | {r['ideal_episodes_per_min']} | "
            f"{r['efficiency']:.0%} | {r['calls']} | {r['wall_s']} |"
        )
    print("\n## Input tokens per judge call, 30 s episode, three 640x480 views\n")
    print("| frames sent | images | input tokens | vs baseline |")
    print("|---|---:|---:|---:|")
    print(
        f"| ours: events + fill (estimate / server-reported) | {tok['ours_images']} | "
        f"{tok['ours_input_tokens_estimated']:,} / {tok['ours_input_tokens_reported']:,} | "
        f"{tok['reduction_x']}x fewer |"
    )
    print(f"| naive: 3 views at 1 fps | {tok['baseline_images']} | {tok['baseline_input_tokens_estimated']:,} | 1x |")
    print(f"\nTarget <= 10k tokens and >= 3.5x fewer: {'met' if tok['target_met'] else 'NOT met'}.")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "machine": platform.platform(),
        "python": platform.python_version(),
        "load_avg": os.getloadavg(),
        "latency_s": args.latency_s,
        "throughput": rows,
        "tokens": tok,
    }
    args.out.write_text(json.dumps(result, indent=2))
    print(f"\nJSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
