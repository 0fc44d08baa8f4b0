"""Shared helpers of the evaluation tests (imported by the tests and by conftest)."""

from __future__ import annotations

import hashlib
import io
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from PIL import Image

from evaluation.judge.anthropic_client import AnthropicJudgeClient, RetryPolicy, make_sdk_client
from evaluation.judge.client import JudgeRequest
from evaluation.judge.config import DatasetConfig, JudgeCommandConfig, JudgeModelConfig, RunConfig
from evaluation.judge.evidence import EvidenceImage, EvidencePack
from evaluation.judge.prompt import JudgePrompt, build_prompt
from evaluation.rubric import Rubric
from evaluation.testing.fake_messages_server import FakeMessagesServer
from evaluation.testing.synthetic_dataset import Scenario

# Five "virtual-rig" episodes; all share one MP4 per camera (episode k starts at k * 3 s).
SCENARIOS = (Scenario.FOLD_AND_PUSH, Scenario.IDLE, Scenario.GRASP_ONLY, Scenario.FOLD_NO_PUSH, Scenario.FOLD_AND_PUSH)
FRAMES_PER_EPISODE = 90
FAST_RETRY = RetryPolicy(max_attempts=4, initial_backoff_s=0.01, max_backoff_s=0.05)
REQUEST_TIMEOUT_S = 10.0  # generous: a loaded CI machine must not cause spurious timeouts
SHORT_TIMEOUT_S = 1.5  # for timeout tests: the server delays its answer longer than this


def judge_config(
    root: Path, store: Path, *, samples: int = 3, concurrency: int = 2, **run: object
) -> JudgeCommandConfig:
    """A configuration for tests: fast retries, short timeout."""
    return JudgeCommandConfig(
        dataset=DatasetConfig(root=root),
        judge=JudgeModelConfig(samples=samples, retry=FAST_RETRY, request_timeout_s=REQUEST_TIMEOUT_S),
        run=replace(RunConfig(concurrency=concurrency), **run),
        store_path=store,
    )


def judge_client(
    server: FakeMessagesServer, retry: RetryPolicy = FAST_RETRY, timeout_s: float = REQUEST_TIMEOUT_S
) -> AnthropicJudgeClient:
    """The real SDK client pointed at the fake server."""
    return AnthropicJudgeClient(make_sdk_client("test-key", server.base_url, timeout_s), retry)


def tiny_pack(n: int = 3, episode: int = 7, width: int = 64, height: int = 48) -> EvidencePack:
    """A pack of `n` real (tiny) JPEG overhead frames, one second apart."""
    images = []
    for i in range(n):
        buf = io.BytesIO()
        Image.new("RGB", (width, height), (10 * i, 80, 120)).save(buf, format="JPEG")
        data = buf.getvalue()
        images.append(
            EvidenceImage(
                f"overhead@{i:.2f}s",
                "overhead",
                i * 30,
                float(i),
                "fill",
                "videos/x.mp4",
                float(i),
                float(i),
                width,
                height,
                data,
                hashlib.sha256(data).hexdigest(),
            )
        )
    return EvidencePack(episode, 0, tuple(images))


def tiny_request(
    pack: EvidencePack, rubric: Rubric, model: str = "claude-sonnet-5-5"
) -> tuple[JudgePrompt, JudgeRequest]:
    """The prompt and first request for a pack."""
    prompt = build_prompt(rubric, pack, "Fold the cloth", 3.0, 30)
    request = JudgeRequest(
        f"ep{pack.episode_index}-s0-first", model, 4000, "", prompt.system, tuple(prompt.messages()), prompt.schema
    )
    return prompt, request


def copy_dataset(source: Path, root: Path) -> Path:
    """A copy of a dataset under another folder name (so another dataset id in the store)."""
    shutil.copytree(source, root)
    return root


def nudge_episode_state(root: Path, episode: int, offset_deg: float = 1.0) -> None:
    """Change one episode's recorded joint state in place (its fingerprint changes, the others' do not)."""
    for path in sorted((root / "data").rglob("*.parquet")):
        table = pq.read_table(path)
        rows = pc.equal(table.column("episode_index"), episode).to_numpy(zero_copy_only=False)
        if not rows.any():
            continue
        column = table.column("observation.state").combine_chunks()
        width = column.type.list_size
        state = column.flatten().to_numpy(zero_copy_only=False).reshape(len(column), width).copy()
        state[rows] += np.float32(offset_deg)
        new = pa.FixedSizeListArray.from_arrays(pa.array(state.reshape(-1), type=column.type.value_type), width)
        index = table.schema.get_field_index("observation.state")
        pq.write_table(table.set_column(index, table.schema.field(index), new), path)
