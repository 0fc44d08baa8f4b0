"""Configuration of `so101-judge`: frozen dataclasses parsed once at the entry point with draccus.

Thresholds of the pieces (frames, events, motion check, routing, retries) live beside their code and
are composed here. `judgment_hash` names everything that can change a judgment; episodes already
scored under the same hash are skipped unless `--run.force=true`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evaluation.config_checks import reject_non_finite
from evaluation.errors import ConfigError
from evaluation.judge.aggregate import RoutingConfig
from evaluation.judge.anthropic_client import RetryPolicy
from evaluation.judge.events import EventConfig
from evaluation.judge.frame_selection import FrameConfig
from evaluation.judge.motion_check import HEURISTIC_VERSION, MotionCheckConfig
from evaluation.judge.prompt import prompt_hash
from evaluation.rubric import Rubric
from evaluation.view_map import view_map

DEFAULT_MODEL = "claude-sonnet-5-5"  # the current Sonnet in anthropic 2.14's model list
EFFORT_LEVELS = ("", "low", "medium", "high", "xhigh", "max")
SCORERS = ("llm", "heuristic", "truth")


@dataclass(frozen=True)
class DatasetConfig:
    """Which dataset and episodes to judge."""

    root: Path | None = None  # LeRobot v3.0 dataset folder (the one holding meta/info.json); required
    dataset_id: str = ""  # name of the dataset in the store; "" uses the folder name
    episodes: tuple[int, ...] = ()  # episode indices to judge, e.g. [0,3,4]; empty judges all
    # Which of the dataset's cameras stands for each of our views, e.g. overhead:top,left_wrist:front;
    # "" needs none (our own datasets name their cameras left_wrist, right_wrist, overhead)
    views: str = ""

    def __post_init__(self) -> None:
        """Check the view map's syntax (its cameras are checked against the dataset when it opens)."""
        view_map(self.views)


@dataclass(frozen=True)
class JudgeModelConfig:
    """The LLM judge: model, sampling, budget and API access."""

    model: str = DEFAULT_MODEL  # Anthropic model id; pin it, and re-calibrate when it changes
    samples: int = 5  # K calls per episode with perturbed frame times and view order, aggregated by median
    max_tokens: int = 8000  # output budget per call, adaptive thinking included, tokens
    reask_max_tokens_cap: int = 32000  # a re-ask after a cut-off reply gets 2x max_tokens, at most this many tokens
    effort: str = ""  # output_config.effort: low, medium, high, xhigh or max; "" sends none (model default)
    request_timeout_s: float = 300.0  # one request may take this long before it is retried, seconds
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    base_url: str = ""  # API base URL; "" uses the SDK default (or ANTHROPIC_BASE_URL)
    api_key_env: str = "ANTHROPIC_API_KEY"  # environment variable that holds the API key
    input_usd_per_mtok: float | None = None  # input price override, USD per million tokens (unknown models)
    output_usd_per_mtok: float | None = None  # output price override, USD per million tokens
    expected_output_tokens: int = 1500  # output tokens per call assumed by the estimate (thinking included)
    chars_per_token: float = 3.5  # text token estimate, characters per token
    count_tokens: bool = True  # check the estimate on the first call with the API's free count_tokens
    include_motion_summary: bool = False  # tell the judge the motion heuristic's findings (weakens the cross-check)

    def __post_init__(self) -> None:
        """Validate the fields."""
        reject_non_finite(self, "judge")
        if not self.model.strip():
            raise ConfigError("judge.model is empty; give an Anthropic model id such as claude-sonnet-5-5")
        if not 1 <= self.samples <= 15:
            raise ConfigError(f"judge.samples={self.samples}; allowed: 1..15 (5 is recommended)")
        if self.max_tokens < 256:
            raise ConfigError(f"judge.max_tokens={self.max_tokens} must be >= 256 (thinking counts against it)")
        if self.reask_max_tokens_cap < self.max_tokens:
            raise ConfigError(
                f"judge.reask_max_tokens_cap={self.reask_max_tokens_cap} is below judge.max_tokens={self.max_tokens}; "
                f"pass --judge.reask_max_tokens_cap={2 * self.max_tokens}"
            )
        if self.effort not in EFFORT_LEVELS:
            raise ConfigError(f"judge.effort={self.effort!r}; allowed: {list(EFFORT_LEVELS)}")
        if self.request_timeout_s <= 0 or self.chars_per_token <= 0:
            raise ConfigError("judge.request_timeout_s and judge.chars_per_token must be > 0")


@dataclass(frozen=True)
class RunConfig:
    """How the batch of episodes is run."""

    concurrency: int = 4  # episodes judged at once (each sends its samples one after another)
    force: bool = False  # judge again episodes already scored under this configuration (adds a new run)
    tag: str = ""  # label stored with the run, e.g. the policy ("smolvla-v2"), for reports
    use_message_batches: bool = False  # send all calls as Message Batches: half price, results in minutes to hours
    batch_poll_interval_s: float = 30.0  # how often a Message Batch is polled, seconds
    batch_max_wait_s: float = 86400.0  # give up waiting for a Message Batch after this long, seconds
    batch_max_requests: int = 2000  # requests per Message Batch (the API allows 100,000 or 256 MB)
    max_estimated_cost_usd: float = 10.0  # refuse to start when the cost estimate exceeds this, USD (raise it for more)
    allow_unknown_price: bool = False  # start although judge.model's price is unknown (then no cost limit holds)
    pause_after_overloads: int = 20  # overloaded replies (529/503) in a row, all workers together, that pause the run

    def __post_init__(self) -> None:
        """Validate the fields."""
        reject_non_finite(self, "run")
        if not 1 <= self.concurrency <= 64:
            raise ConfigError(f"run.concurrency={self.concurrency}; allowed: 1..64")
        if self.batch_poll_interval_s <= 0 or self.batch_max_wait_s <= 0 or self.batch_max_requests < 1:
            raise ConfigError("run.batch_poll_interval_s, run.batch_max_wait_s and run.batch_max_requests must be > 0")
        if self.max_estimated_cost_usd <= 0:
            raise ConfigError(
                f"run.max_estimated_cost_usd={self.max_estimated_cost_usd} must be > 0 USD (0 no longer lifts the "
                "limit); pass the most a run may cost, e.g. --run.max_estimated_cost_usd=50"
            )
        if self.pause_after_overloads < 1:
            raise ConfigError(f"run.pause_after_overloads={self.pause_after_overloads} must be >= 1, e.g. 20")


@dataclass(frozen=True)
class ExportConfig:
    """Optional exports of the store after the run."""

    csv_path: Path | None = None  # write all scores to this CSV file
    parquet_path: Path | None = None  # write all scores to this parquet file
    only: bool = False  # export without judging


@dataclass(frozen=True)
class DryRunConfig:
    """What `--dry_run=true` writes."""

    output_dir: Path | None = None  # folder for contact sheets, prompts and the estimate; None: beside the store
    sheets: int = 3  # episodes that get a contact sheet and a prompt file


@dataclass(frozen=True)
class JudgeCommandConfig:
    """so101-judge: score recorded episodes against a rubric with an LLM judge (or the motion heuristic)."""

    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    rubric_path: Path | None = None  # rubric YAML; None uses the built-in cloth-folding rubric (R1-R3)
    # "llm" (Claude), "heuristic" (offline motion heuristic, labelled as such) or "truth" (the virtual rig's
    # ground truth from each episode's quality card, stored as its own scorer: a reference, not a judgment)
    scorer: str = "llm"
    dry_run: bool = False  # write contact sheets, the exact prompt and the cost estimate; call no API
    judge: JudgeModelConfig = field(default_factory=JudgeModelConfig)
    frames: FrameConfig = field(default_factory=FrameConfig)
    events: EventConfig = field(default_factory=EventConfig)
    motion: MotionCheckConfig = field(default_factory=MotionCheckConfig)
    routing: RoutingConfig = field(default_factory=RoutingConfig)
    run: RunConfig = field(default_factory=RunConfig)
    # The evaluation store (SQLite) verdicts go to; None puts it beside the dataset: <folder>.evaluation.sqlite
    store_path: Path | None = None
    export: ExportConfig = field(default_factory=ExportConfig)
    dry: DryRunConfig = field(default_factory=DryRunConfig)

    def __post_init__(self) -> None:
        """Validate the fields that span sections."""
        if self.scorer not in SCORERS:
            raise ConfigError(f"scorer={self.scorer!r}; allowed: {list(SCORERS)}")
        if self.dataset.root is None:
            raise ConfigError("dataset.root is required: pass --dataset.root=<LeRobot dataset folder>")


def judgment_config(config: JudgeCommandConfig, rubric: Rubric) -> dict[str, Any]:
    """Everything that can change a judgment (and nothing that only changes speed or cost)."""
    if config.scorer == "truth":  # the card's scores, read as they are: only the rubric says which criteria
        return {"scorer": config.scorer, "rubric_version": rubric.version}
    common = {
        "scorer": config.scorer,
        "rubric_version": rubric.version,
        "events": asdict(config.events),
        "motion": asdict(config.motion),
        "heuristic_version": HEURISTIC_VERSION,
    }
    if config.scorer == "heuristic":
        return common
    j = config.judge
    return {
        **common,
        "model": j.model,
        "samples": j.samples,
        "max_tokens": j.max_tokens,
        "reask_max_tokens_cap": j.reask_max_tokens_cap,
        "effort": j.effort,
        "include_motion_summary": j.include_motion_summary,
        "prompt_hash": prompt_hash(rubric),
        **({"views": view_map(config.dataset.views)} if config.dataset.views.strip() else {}),  # which camera it saw
        "frames": asdict(config.frames),
        "routing": asdict(config.routing),
    }


def judgment_hash(config: JudgeCommandConfig, rubric: Rubric) -> str:
    """Hash of `judgment_config` (16 hex chars)."""
    payload = json.dumps(judgment_config(config, rubric), sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def config_to_dict(config: JudgeCommandConfig) -> dict[str, Any]:
    """The whole configuration as JSON-friendly data (stored with each run)."""
    return json.loads(json.dumps(asdict(config), default=str))
