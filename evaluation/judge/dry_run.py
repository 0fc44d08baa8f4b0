"""`so101-judge --dry_run=true`: what would be sent and what it would cost, with no API call.

For every pending episode it plans the frames of all K samples and estimates tokens and cost from
the exact prompt text and the image sizes (no decoding). For the first `dry.sheets` episodes it also
writes a contact sheet of the chosen frames, the frames themselves, the exact prompt (prompt.md) and
the request body with the image data elided (request.json).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evaluation.episode_source import DatasetSource, EpisodeRecord
from evaluation.judge.config import JudgeCommandConfig
from evaluation.judge.contact_sheet import write_contact_sheet
from evaluation.judge.cost import CallEstimate, RunEstimate, estimate_call, estimate_run, price_for
from evaluation.judge.episode_prep import (
    PreparedEpisode,
    build_request,
    evidence_packs,
    placeholder_pack,
    prepare_episode,
)
from evaluation.judge.evidence import EvidencePack
from evaluation.judge.prompt import JudgePrompt
from evaluation.rubric import Rubric


@dataclass(frozen=True)
class DryRunEpisode:
    """The plan of one episode."""

    episode_index: int  # episode
    images_per_call: int  # images in sample 0
    input_tokens_per_call: int  # estimated input tokens of sample 0
    files: tuple[Path, ...]  # files written for it (empty beyond dry.sheets)


@dataclass(frozen=True)
class DryRunReport:
    """What a dry run found."""

    output_dir: Path  # where files were written
    episodes: tuple[DryRunEpisode, ...]  # pending episodes
    skipped: int  # already scored under this configuration
    calls: tuple[CallEstimate, ...]  # every call that would be made (episodes x samples)
    estimate: RunEstimate  # totals and cost (None cost when the price is unknown)


def dry_run(
    source: DatasetSource,
    rubric: Rubric,
    config: JudgeCommandConfig,
    pending: list[tuple[EpisodeRecord, str]],
    skipped: int,
    output_dir: Path,
) -> DryRunReport:
    """Plan, estimate and write the dry-run files."""
    output_dir.mkdir(parents=True, exist_ok=True)
    k = config.judge.samples
    calls = estimate_calls(source, rubric, config, pending)
    episodes: list[DryRunEpisode] = []
    for n, (ep, _) in enumerate(pending):
        files: tuple[Path, ...] = ()
        if n < config.dry.sheets:
            prepared = prepare_episode(source, ep, rubric, config, k)
            files = _write_episode(source, rubric, config, prepared, output_dir)
        first = calls[n * k]
        episodes.append(DryRunEpisode(ep.index, first.images, first.input_tokens, files))
    price = price_for(config.judge.model, config.judge.input_usd_per_mtok, config.judge.output_usd_per_mtok)
    estimate = estimate_run(calls, price, batch=config.run.use_message_batches)
    report = DryRunReport(output_dir, tuple(episodes), skipped, tuple(calls), estimate)
    (output_dir / "estimate.json").write_text(json.dumps(_report_json(report, config), indent=2, default=str))
    return report


def estimate_calls(
    source: DatasetSource, rubric: Rubric, config: JudgeCommandConfig, pending: list[tuple[EpisodeRecord, str]]
) -> list[CallEstimate]:
    """Token estimate of every call judging `pending` would make (no decoding, no files)."""
    calls = []
    for ep, _ in pending:
        prepared = prepare_episode(source, ep, rubric, config, config.judge.samples)
        for sample in range(config.judge.samples):
            pack = placeholder_pack(prepared, sample)
            prompt, _ = build_request(rubric, prepared, pack, config)
            calls.append(estimate_call(prompt, pack, config.judge.expected_output_tokens, config.judge.chars_per_token))
    return calls


def _write_episode(
    source: DatasetSource, rubric: Rubric, config: JudgeCommandConfig, prepared: PreparedEpisode, out: Path
) -> tuple[Path, ...]:
    pack = evidence_packs(source, prepared, config.frames.jpeg_quality)[0]
    prompt, request = build_request(rubric, prepared, pack, config)
    folder = out / f"episode_{prepared.episode.index:06d}"
    frames = folder / "frames"
    frames.mkdir(parents=True, exist_ok=True)
    for image in pack.images:
        (frames / f"{image.ref.replace('@', '_at_')}.jpg").write_bytes(image.jpeg)
    sheet = write_contact_sheet(pack, folder / "contact_sheet.jpg")
    prompt_md = folder / "prompt.md"
    prompt_md.write_text(render_prompt(prompt, pack))
    request_json = folder / "request.json"
    request_json.write_text(json.dumps(_elide_images(request.params(), pack), indent=2))
    return sheet, prompt_md, request_json, frames


def render_prompt(prompt: JudgePrompt, pack: EvidencePack) -> str:
    """The exact prompt as Markdown, each image shown as its manifest line."""
    lines = ["# System (cached)", "", prompt.system[0]["text"], "", "# User", ""]
    images = iter(pack.images)
    for block in prompt.user_content:
        if block["type"] == "text":
            lines.append(block["text"])
        else:
            image = next(images)
            lines.append(
                f"(image {image.width}x{image.height} JPEG, {len(image.jpeg)} bytes, sha256 {image.sha256[:16]}...)"
            )
        lines.append("")
    lines += ["# Output schema (output_config.format)", "", "```json", json.dumps(prompt.schema, indent=2), "```", ""]
    return "\n".join(lines)


def _elide_images(params: dict[str, Any], pack: EvidencePack) -> dict[str, Any]:
    images = iter(pack.images)
    content = []
    for block in params["messages"][0]["content"]:
        if block["type"] == "image":
            image = next(images)
            data = f"<{len(image.jpeg)} bytes of JPEG, base64; sha256={image.sha256}>"
            block = {**block, "source": {**block["source"], "data": data}}
        content.append(block)
    return {**params, "messages": [{**params["messages"][0], "content": content}]}


def _report_json(report: DryRunReport, config: JudgeCommandConfig) -> dict[str, Any]:
    return {
        "model": config.judge.model,
        "samples_per_episode": config.judge.samples,
        "message_batches": config.run.use_message_batches,
        "skipped_already_scored": report.skipped,
        "estimate": asdict(report.estimate),
        "episodes": [
            {
                "episode_index": e.episode_index,
                "images_per_call": e.images_per_call,
                "input_tokens_per_call": e.input_tokens_per_call,
                "files": [str(f) for f in e.files],
            }
            for e in report.episodes
        ],
    }
