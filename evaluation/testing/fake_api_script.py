"""What the loopback Messages API server checks and answers: request checks, scripted actions, usage.

The checks mirror what the judge must send: images present and each preceded by its label, the
output schema in `output_config.format`, a cacheable system prompt, no sampling parameters, no
forced tool choice, no prefill. Usage follows Anthropic's documented accounting (image tokens about
width x height / 750 after downscaling; text estimated from characters), computed here independently
of the judge's own estimator so the two can be compared.
"""

from __future__ import annotations

import base64
import io
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

LABEL = re.compile(
    r"^\[(?P<ref>\S+) \| view (?P<view>[a-z_]+) \| t=(?P<t>\d+\.\d+) s \| frame (?P<frame>\d+) \| phase: .+\]$"
)
EPISODE = re.compile(r"^Episode (?P<index>\d+)\.")
FORBIDDEN_PARAMS = ("temperature", "top_p", "top_k")


@dataclass(frozen=True)
class Reply:
    """Answer 200 with a schema-valid verdict (scores from `scores`, else the server's score_fn), or `text`."""

    text: str | None = None  # reply text verbatim; None builds a verdict citing the frames sent
    stop_reason: str = "end_turn"  # e.g. "max_tokens" to simulate a cut-off reply
    scores: tuple[tuple[str, float], ...] = ()  # (criterion, score) overriding score_fn for this reply
    uncertain: tuple[str, ...] = ()  # criteria this reply marks uncertain (confidence low)


@dataclass(frozen=True)
class HttpError:
    """Answer with an API error (429 rate_limit_error, 529 overloaded_error, 500 api_error, ...)."""

    status: int  # HTTP status
    error_type: str  # Anthropic error type, e.g. "rate_limit_error"
    message: str = "scripted error"  # error.message
    retry_after_s: float | None = None  # sent as retry-after-ms when set
    error_code: str | None = None  # error.details.error_code, e.g. "enforced_spend_limit_reached"


@dataclass(frozen=True)
class Delay:
    """Wait before answering (longer than the client's timeout to simulate a timeout), then answer."""

    seconds: float  # how long to wait
    then: Reply = field(default_factory=Reply)  # what to send afterwards (usually lost)


@dataclass(frozen=True)
class Malformed:
    """Answer 200 with reply text that is not JSON."""

    text: str = '{"R1": {"observations": [ this is not json'


@dataclass(frozen=True)
class SchemaBreak:
    """Answer 200 with JSON that breaks the schema (a score off the scale, a missing criterion)."""


@dataclass(frozen=True)
class Refusal:
    """Answer 200 with stop_reason "refusal"."""

    category: str = "general_harms"  # stop_details.category
    explanation: str = "scripted refusal"  # stop_details.explanation


Action = Reply | HttpError | Delay | Malformed | SchemaBreak | Refusal
ScoreFn = Callable[[int, str], float]  # (episode index, criterion id) -> score


def blocks(content: object) -> list[dict[str, Any]]:
    """Content blocks of a message (a plain string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)] if isinstance(content, list) else []


def check_request(
    body: dict[str, Any], headers: dict[str, str], expected_model: str | None, count_only: bool = False
) -> list[str]:
    """Everything wrong with a Messages (or count_tokens, `count_only`) request; empty when it is right."""
    problems: list[str] = []
    if not headers.get("x-api-key") and not headers.get("authorization", "").startswith("Bearer "):
        problems.append("no API key (x-api-key or authorization header)")
    if not headers.get("anthropic-version"):
        problems.append("no anthropic-version header")
    for name in FORBIDDEN_PARAMS:
        if name in body:
            problems.append(f"sampling parameter '{name}' sent (current models reject it)")
    if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
        problems.append("forced tool_choice sent")
    if (body.get("thinking") or {}).get("type") == "disabled":
        problems.append("thinking disabled sent")
    if expected_model and body.get("model") != expected_model:
        problems.append(f"model {body.get('model')!r}, expected {expected_model!r}")
    if not count_only and (not isinstance(body.get("max_tokens"), int) or body["max_tokens"] <= 0):
        problems.append("max_tokens missing or not positive")
    fmt = (body.get("output_config") or {}).get("format") or {}
    schema = fmt.get("schema")
    if fmt.get("type") != "json_schema" or not isinstance(schema, dict) or not schema.get("required"):
        problems.append("no JSON schema in output_config.format")
    system = body.get("system")
    if not isinstance(system, list) or not system or (system[-1].get("cache_control") or {}).get("type") != "ephemeral":
        problems.append("system prompt is not a list of blocks ending with an ephemeral cache_control")
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        problems.append("last message is not a user turn (prefill is rejected)")
        return problems
    problems += _check_evidence(blocks(messages[0].get("content")))
    return problems


def _check_evidence(content: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    images = 0
    for i, block in enumerate(content):
        if block.get("type") != "image":
            continue
        images += 1
        prev = content[i - 1] if i else {}
        m = LABEL.match(prev.get("text", "")) if prev.get("type") == "text" else None
        if m is None:
            problems.append(f"image {images} is not preceded by a label block")
        elif not m["ref"].startswith(m["view"] + "@"):
            problems.append(f"image {images}: ref {m['ref']} does not match view {m['view']}")
        source = block.get("source") or {}
        if source.get("type") != "base64" or source.get("media_type") != "image/jpeg":
            problems.append(f"image {images} is not a base64 JPEG")
            continue
        data = base64.b64decode(source.get("data", ""))
        if not data.startswith(b"\xff\xd8"):
            problems.append(f"image {images} bytes are not a JPEG")
    if images == 0:
        problems.append("no images in the first user turn")
    return problems


def episode_of(body: dict[str, Any]) -> int | None:
    """Episode index stated at the start of the first user turn."""
    for block in blocks((body.get("messages") or [{}])[0].get("content")):
        if block.get("type") == "text":
            m = EPISODE.match(block["text"])
            return int(m["index"]) if m else None
    return None


def refs_of(body: dict[str, Any]) -> list[str]:
    """Frame refs in the labels of the first user turn, in order."""
    refs = []
    for block in blocks((body.get("messages") or [{}])[0].get("content")):
        m = LABEL.match(block.get("text", "")) if block.get("type") == "text" else None
        if m:
            refs.append(m["ref"])
    return refs


def verdict_text(body: dict[str, Any], score_fn: ScoreFn, uncertain: Callable[[int, str], bool]) -> str:
    """A schema-valid reply: observations on the first and last frames, the scripted scores."""
    schema = body["output_config"]["format"]["schema"]
    refs = refs_of(body) or ["overhead@0.00s"]
    episode = episode_of(body) or 0
    out = {}
    for cid in schema["required"]:
        out[cid] = {
            "observations": [
                {"frame_ref": refs[0], "note": "the cloth lies flat"},
                {"frame_ref": refs[-1], "note": "the final state"},
            ],
            "evidence_frames": [refs[-1]],
            "score": score_fn(episode, cid),
            "confidence": "low" if uncertain(episode, cid) else "high",
            "uncertain": uncertain(episode, cid),
        }
    return json.dumps(out)


def reply_text(body: dict[str, Any], reply: Reply, score_fn: ScoreFn, uncertain: Callable[[int, str], bool]) -> str:
    """The text of a `Reply` to a request."""
    if reply.text is not None:
        return reply.text
    scores = dict(reply.scores)
    return verdict_text(
        body,
        lambda ep, cid: scores[cid] if cid in scores else score_fn(ep, cid),
        lambda ep, cid: cid in reply.uncertain or (not reply.uncertain and uncertain(ep, cid)),
    )


def error_answer(error: HttpError) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, JSON body, extra headers) of a scripted API error."""
    body: dict[str, Any] = {"type": error.error_type, "message": error.message}
    if error.error_code:
        body["details"] = {"error_code": error.error_code}
    headers = {} if error.retry_after_s is None else {"retry-after-ms": str(int(error.retry_after_s * 1000))}
    return error.status, {"type": "error", "error": body}, headers


def answer_text(
    body: dict[str, Any], action: Action, score_fn: ScoreFn, uncertain: Callable[[int, str], bool]
) -> tuple[str, str, dict[str, str] | None]:
    """(text, stop_reason, stop_details) of a 200 answer to a request (any action but HttpError)."""
    if isinstance(action, Refusal):
        return "", "refusal", {"type": "refusal", "category": action.category, "explanation": action.explanation}
    if isinstance(action, Malformed):
        return action.text, "end_turn", None
    if isinstance(action, SchemaBreak):
        return schema_breaking_text(body), "end_turn", None
    reply = action.then if isinstance(action, Delay) else action
    if not isinstance(reply, Reply):
        raise TypeError(f"no 200 answer for {type(action).__name__}")  # a bug in the fake
    return reply_text(body, reply, score_fn, uncertain), reply.stop_reason, None


def schema_breaking_text(body: dict[str, Any]) -> str:
    """JSON that breaks the schema: the first criterion scored 0.7 and the last one missing."""
    schema = body["output_config"]["format"]["schema"]
    ids = schema["required"]
    return json.dumps(
        {ids[0]: {"observations": [], "evidence_frames": [], "score": 0.7, "confidence": "high", "uncertain": False}}
    )


@dataclass
class Accounting:
    """Token accounting with a prompt cache keyed by the system blocks (thread-safety: caller's lock)."""

    chars_per_token: float = 3.5  # text estimate, characters per token
    output_overhead_tokens: int = 0  # extra output tokens per reply (stands in for thinking)
    _cached: set[str] = field(default_factory=set)

    def usage(self, body: dict[str, Any], reply_text: str, use_cache: bool = True) -> dict[str, int]:
        """Usage of a request: cacheable system tokens are created once, then read."""
        system_chars = sum(len(b.get("text", "")) for b in body.get("system") or [])
        schema = ((body.get("output_config") or {}).get("format") or {}).get("schema")
        text_chars = len(json.dumps(schema)) if schema else 0
        image_tokens = 0
        for message in body.get("messages") or []:
            for block in blocks(message.get("content")):
                if block.get("type") == "text":
                    text_chars += len(block["text"])
                elif block.get("type") == "image":
                    with Image.open(io.BytesIO(base64.b64decode(block["source"]["data"]))) as im:
                        image_tokens += documented_image_tokens(*im.size)
        system_tokens = math.ceil(system_chars / self.chars_per_token)
        key = json.dumps(body.get("system"), sort_keys=True)
        usage = {
            "input_tokens": math.ceil(text_chars / self.chars_per_token) + image_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        if use_cache and key in self._cached:
            usage["cache_read_input_tokens"] = system_tokens
        elif use_cache:
            self._cached.add(key)
            usage["cache_creation_input_tokens"] = system_tokens
        else:
            usage["input_tokens"] += system_tokens
        usage["output_tokens"] = math.ceil(len(reply_text) / self.chars_per_token) + self.output_overhead_tokens
        return usage


def documented_image_tokens(width: int, height: int) -> int:
    """Anthropic's documented estimate: downscale to <= 1568 px long edge and <= ~1600 tokens, then w*h/750."""
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1600 * 750 / (width * height)))
    return math.ceil(math.floor(width * scale) * math.floor(height * scale) / 750)
