"""Token and cost estimates before sending, and cost from the usage the API reports.

Image tokens follow Anthropic's documented rule (about width x height / 750, after downscaling an
image whose long edge exceeds 1568 px or whose cost exceeds ~1600 tokens). Text tokens are estimated
from characters (`chars_per_token`); `count_tokens` on the API gives exact numbers when a key is set.
Prices are USD per million tokens; cache writes cost 1.25x input, cache reads 0.1x, batches half.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass

from evaluation.judge.evidence import EvidencePack
from evaluation.judge.prompt import JudgePrompt

IMAGE_PIXELS_PER_TOKEN = 750.0
MAX_LONG_EDGE_PX = 1568
MAX_IMAGE_TOKENS = 1600
DEFAULT_CHARS_PER_TOKEN = 3.5  # rough for English prose and JSON on current Claude tokenizers

# (input, output) USD per million tokens, from the model pages as of late 2026 (see docs/judge-research.md §3.9).
KNOWN_PRICES_USD_PER_MTOK: dict[str, tuple[float, float]] = {
    "claude-sonnet-5-5": (2.0, 10.0),
    "claude-opus-5-5": (4.0, 20.0),
    "claude-fable-5-1": (10.0, 50.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-haiku-4-5-20251001": (1.0, 5.0),
}


@dataclass(frozen=True)
class Price:
    """Prices of one model."""

    input_usd_per_mtok: float  # base input price, USD per million tokens
    output_usd_per_mtok: float  # output price (thinking included), USD per million tokens
    cache_write_multiplier: float = 1.25  # 5-minute cache write, times the input price
    cache_read_multiplier: float = 0.1  # cache read, times the input price
    batch_multiplier: float = 0.5  # Message Batches discount on everything


def price_for(model: str, input_override: float | None = None, output_override: float | None = None) -> Price | None:
    """The price of a model: overrides first, then the built-in table; None when unknown."""
    known = KNOWN_PRICES_USD_PER_MTOK.get(model)
    inp = input_override if input_override is not None else (known[0] if known else None)
    out = output_override if output_override is not None else (known[1] if known else None)
    if inp is None or out is None:
        return None
    return Price(inp, out)


@dataclass(frozen=True)
class TokenUsage:
    """Token counts of one call, as the API reports them (or as estimated)."""

    input_tokens: int = 0  # uncached input tokens
    output_tokens: int = 0  # output tokens, thinking included
    cache_creation_input_tokens: int = 0  # input tokens written to the prompt cache
    cache_read_input_tokens: int = 0  # input tokens read from the prompt cache

    @property
    def total_input_tokens(self) -> int:
        """All input tokens, cached or not."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def to_dict(self) -> dict[str, int]:
        """JSON-serialisable form."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }


def cost_usd(usage: TokenUsage, price: Price, batch: bool = False) -> float:
    """Cost of reported usage, USD."""
    per = 1e-6
    total = (
        usage.input_tokens * price.input_usd_per_mtok
        + usage.cache_creation_input_tokens * price.input_usd_per_mtok * price.cache_write_multiplier
        + usage.cache_read_input_tokens * price.input_usd_per_mtok * price.cache_read_multiplier
        + usage.output_tokens * price.output_usd_per_mtok
    ) * per
    return total * (price.batch_multiplier if batch else 1.0)


def image_tokens(width: int, height: int) -> int:
    """Estimated input tokens of one image (after the API's automatic downscaling)."""
    scale = min(
        1.0,
        MAX_LONG_EDGE_PX / max(width, height),
        math.sqrt(MAX_IMAGE_TOKENS * IMAGE_PIXELS_PER_TOKEN / (width * height)),
    )
    w, h = math.floor(width * scale), math.floor(height * scale)
    return math.ceil(w * h / IMAGE_PIXELS_PER_TOKEN)


def text_tokens(chars: int, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> int:
    """Estimated tokens of `chars` characters of text."""
    return math.ceil(chars / chars_per_token)


@dataclass(frozen=True)
class CallEstimate:
    """Estimated tokens of one judge call."""

    cacheable_tokens: int  # the system prompt (rubric, geometry), cached after the first call
    text_tokens: int  # labels, episode facts, request and the output schema
    image_tokens: int  # all images
    images: int  # number of images
    output_tokens: int  # expected output, thinking included

    @property
    def input_tokens(self) -> int:
        """All input tokens of the call."""
        return self.cacheable_tokens + self.text_tokens + self.image_tokens


def estimate_call(
    prompt: JudgePrompt,
    pack: EvidencePack,
    expected_output_tokens: int,
    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN,
) -> CallEstimate:
    """Estimate the tokens of one call from the exact prompt and the image sizes."""
    system_chars = sum(len(b["text"]) for b in prompt.system)
    user_chars = sum(len(b["text"]) for b in prompt.user_content if b["type"] == "text")
    schema_chars = len(json.dumps(prompt.schema))
    return CallEstimate(
        cacheable_tokens=text_tokens(system_chars, chars_per_token),
        text_tokens=text_tokens(user_chars + schema_chars, chars_per_token),
        image_tokens=sum(image_tokens(i.width, i.height) for i in pack.images),
        images=len(pack.images),
        output_tokens=expected_output_tokens,
    )


@dataclass(frozen=True)
class RunEstimate:
    """Estimated tokens and cost of a run."""

    calls: int  # judge calls (episodes x samples)
    input_tokens: int  # all input tokens
    output_tokens: int  # expected output tokens
    usd: float | None  # None when the model's price is unknown
    batch: bool  # priced with the Message Batches discount

    @property
    def input_tokens_per_call(self) -> float:
        """Mean input tokens per call."""
        return self.input_tokens / self.calls if self.calls else 0.0


def estimate_run(estimates: Iterable[CallEstimate], price: Price | None, batch: bool) -> RunEstimate:
    """Total a run's calls, assuming the system prompt is cached after the first call (not in batches)."""
    calls = list(estimates)
    usd: float | None = None
    if price is not None:
        usd = 0.0
        for i, e in enumerate(calls):
            if batch:
                usage = TokenUsage(input_tokens=e.input_tokens, output_tokens=e.output_tokens)
            else:
                cached = {"cache_creation_input_tokens" if i == 0 else "cache_read_input_tokens": e.cacheable_tokens}
                usage = TokenUsage(input_tokens=e.text_tokens + e.image_tokens, output_tokens=e.output_tokens, **cached)
            usd += cost_usd(usage, price, batch)
    return RunEstimate(
        calls=len(calls),
        input_tokens=sum(e.input_tokens for e in calls),
        output_tokens=sum(e.output_tokens for e in calls),
        usd=usd,
        batch=batch,
    )
