"""Prepare one episode for judging: signals, events, motion check, frame plans, evidence, requests.

    signals --events--> motion check (heuristic)
            --frame plans (sample 0 + K-1 perturbed)--> decode once --> labelled JPEG packs
            --prompt + model settings--> JudgeRequest per sample

Plans are deterministic for a configuration and episode, so a restart rebuilds the same requests
(identical JPEG hashes) to re-ask or to collect a Message Batch submitted before the restart.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.episode_source import DatasetSource, EpisodeRecord
from evaluation.judge.client import JudgeRequest
from evaluation.judge.config import JudgeCommandConfig
from evaluation.judge.events import find_events
from evaluation.judge.evidence import EvidenceImage, EvidencePack, JpegCache, build_pack, decode_plans, frame_ref
from evaluation.judge.frame_selection import FramePlan, perturb, plan_frames
from evaluation.judge.motion_check import MotionCheck, check_motion
from evaluation.judge.prompt import JudgePrompt, build_prompt
from evaluation.rubric import Rubric


@dataclass(frozen=True)
class PreparedEpisode:
    """An episode ready for judging (no pixels decoded yet)."""

    episode: EpisodeRecord  # the episode
    fingerprint: str  # content hash
    motion: MotionCheck  # heuristic motion check
    plans: tuple[FramePlan, ...]  # one per sample; plans[0] is unperturbed; none when the episode has no video


def prepare_episode(
    source: DatasetSource, episode: EpisodeRecord, rubric: Rubric, config: JudgeCommandConfig, samples: int
) -> PreparedEpisode:
    """Read signals, find events, run the motion check and plan frames for `samples` samples."""
    signals = source.signals(episode)
    fingerprint = source.fingerprint(episode)
    events = find_events(signals, config.events)
    motion = check_motion(signals, events, config.motion)
    plans: tuple[FramePlan, ...] = ()  # none without pictures: the heuristic scorer reads the joints alone
    if episode.views:
        base = plan_frames(events, rubric, config.frames, episode.views, episode.index)
        plans = tuple(perturb(base, k, config.frames, episode.length, fingerprint) for k in range(samples))
    return PreparedEpisode(episode, fingerprint, motion, plans)


def evidence_packs(source: DatasetSource, prepared: PreparedEpisode, jpeg_quality: int) -> list[EvidencePack]:
    """Decode the planned frames (once per view) and encode the labelled JPEG packs, one per sample."""
    decoded = decode_plans(prepared.episode, prepared.plans)
    jpegs = JpegCache(jpeg_quality)
    return [build_pack(prepared.episode, plan, decoded, jpegs, source.root) for plan in prepared.plans]


def placeholder_pack(prepared: PreparedEpisode, sample_index: int) -> EvidencePack:
    """A pack with image sizes and labels but no pixels, for estimates without decoding."""
    ep = prepared.episode
    plan = prepared.plans[sample_index]
    images = []
    for f in plan.frames:
        for view in f.views:
            seg = ep.video(view)
            t = seg.file_time_s(f.frame_index, ep.fps)
            images.append(
                EvidenceImage(
                    frame_ref(view, f.frame_index / ep.fps),
                    view,
                    f.frame_index,
                    f.frame_index / ep.fps,
                    f.phase_label(),
                    str(seg.path),
                    t,
                    t,
                    seg.width,
                    seg.height,
                    b"",
                    "",
                )
            )
    return EvidencePack(ep.index, sample_index, tuple(images))


def motion_facts(motion: MotionCheck) -> str:
    """A one-paragraph motion summary for the judge (only with judge.include_motion_summary)."""
    arms = "; ".join(
        f"{a.side.value} arm: moved {a.max_excursion_deg:.0f} deg at most, {a.grasps} gripper closings, "
        f"{a.releases} openings"
        for a in motion.arms
    )
    return f"Joint data (not the cloth): {arms}."


def build_request(
    rubric: Rubric, prepared: PreparedEpisode, pack: EvidencePack, config: JudgeCommandConfig
) -> tuple[JudgePrompt, JudgeRequest]:
    """The prompt and the first request of one sample."""
    ep = prepared.episode
    facts = motion_facts(prepared.motion) if config.judge.include_motion_summary else ""
    prompt = build_prompt(rubric, pack, ep.task, ep.duration_s, ep.fps, facts)
    return prompt, request_for(prompt, prompt.messages(), custom_id(ep.index, pack.sample_index, "first"), config)


def request_for(prompt: JudgePrompt, messages: list[dict], cid: str, config: JudgeCommandConfig) -> JudgeRequest:
    """A request with the configured model settings."""
    j = config.judge
    return JudgeRequest(cid, j.model, j.max_tokens, j.effort, prompt.system, tuple(messages), prompt.schema)


def custom_id(episode_index: int, sample_index: int, kind: str) -> str:
    """Request id, e.g. `ep12-s3-first` (valid as a Message Batches custom_id)."""
    return f"ep{episode_index}-s{sample_index}-{kind}"
