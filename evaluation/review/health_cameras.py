"""The health view's check that each wrist camera rides on its own arm: the videos of the two wrists not swapped.

    camera_sides  a wrist camera's picture changes when its own arm moves: per episode, each wrist
                  video's frame-to-frame change correlates with its own arm's commanded joint speed
                  more than with the other arm's. Both correlating clearly better with the other arm: the
                  left_wrist and right_wrist videos are swapped (a conversion that exchanged the
                  keys, or cameras that enumerated in another order after a replug).

Each episode is sampled at SAMPLES evenly spread frame pairs per wrist camera, decoded and shrunk to
a small grey picture (LeRobot's videos keep a keyframe every 2 frames, so a seek costs little).
Episodes whose arms move alike (the same speed at the same time, as in a mirrored demonstration)
cannot tell the cameras apart and are passed over, as are episodes where an arm barely moves.
A dataset whose cameras are not mapped to our views (`--dataset.views`) gets one remark that the
check did not run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

from evaluation.episode_source import DatasetSource, EpisodeRecord, EpisodeSignals, VideoSegment
from evaluation.errors import DatasetReadError
from evaluation.review.health_alignment import body_columns, check_again
from evaluation.review.health_checks import CheckOutcome, EpisodeArrays, Finding, outcome_over_episodes
from evaluation.vocabulary import wrist_view
from robot.joints import Side

SAMPLES = 32  # frame pairs per episode and camera: enough for a rank correlation, few enough to decode fast
PAIR_FRAMES = 2  # frames between the two pictures of a pair: a duplicated frame does not read as stillness
PICTURE_CELLS = 24  # the grey picture is shrunk to this many pixels across before differencing
SEEK_AHEAD_S = 0.25  # decode on to a sampled time this close ahead; seek to one farther away
MAX_EPISODES = 40  # episodes sampled, evenly spread: the check stays seconds long on big datasets
MIN_ARM_TRAVEL = 10.0  # joint units summed over the sampled pairs: an arm that moved less says nothing
# Arms whose commanded speeds rank-correlate more than this move alike: no verdict. The mirrored fold
# measures 0.97-0.99 (the synthetic test data 1.0), the fold task 0.13-0.35.
ALIKE_CORRELATION = 0.8
# Swapped when each camera's correlation with the other arm beats its own arm's by this much. Clean
# virtual-rig recordings of the fold task (its arms clamp and fold in turn) measure own - cross
# 0.52-1.09 per camera and episode, their swapped copies the reverse; the mirrored fold's arms move
# alike (0.97-0.99) and give no verdict.
SWAP_MARGIN = 0.3


@dataclass(frozen=True)
class CameraSides:
    """Rank correlations of each wrist camera's picture change with each arm's joint speed, in one episode."""

    own: dict[Side, float]  # camera on side s with arm s
    cross: dict[Side, float]  # camera on side s with the other arm
    arms_alike: float  # rank correlation of the two arms' speeds

    @property
    def swapped(self) -> bool:
        """Both cameras follow the other arm clearly better than their own."""
        return all(self.cross[side] - self.own[side] >= SWAP_MARGIN for side in Side)


def check_camera_sides(source: DatasetSource, arrays: EpisodeArrays) -> CheckOutcome:
    """Per episode (at most MAX_EPISODES, evenly spread): does each wrist video move with its own arm?"""
    views = {wrist_view(side) for side in Side}
    episodes = [ep for ep in source.episodes if views <= set(ep.views) and ep.index in arrays.signals]
    if set(source.arms) != set(Side) or not episodes:
        cameras = ", ".join(source.cameras) or "none"
        why = (
            f"did not run: it needs two arms and both wrist views ({', '.join(sorted(views))}); the dataset's "
            f"cameras: {cameras} (map them with --dataset.views=left_wrist:<camera>,right_wrist:<camera>)"
        )
        return CheckOutcome(0, 0, (Finding("camera_sides", "info", None, why),))
    sampled = len(episodes) > MAX_EPISODES
    if sampled:
        picks = np.unique(np.linspace(0, len(episodes) - 1, MAX_EPISODES).round().astype(int))
        episodes = [episodes[i] for i in picks]
    findings: list[Finding] = []
    checked = 0
    for ep in episodes:
        try:
            sides = camera_sides(ep, arrays.signals[ep.index])
        except DatasetReadError:  # an undecodable video: the videos check names its file
            continue
        if sides is None:
            continue
        checked += 1
        if sides.swapped:
            findings.append(Finding("camera_sides", "error", ep.index, _swapped(source.root, ep, sides)))
    notes = [f"sampled {len(episodes)} of {len(source.episodes)} episodes, evenly spread"] if sampled else []
    if not checked:
        why = (
            "no episode could tell the wrist cameras apart: in each, an arm barely moved or both moved alike "
            "(the same speed at the same moments, as in a mirrored demonstration)"
        )
        findings.append(Finding("camera_sides", "info", None, why))
    return outcome_over_episodes(checked, findings, notes)


def camera_sides(episode: EpisodeRecord, signals: EpisodeSignals) -> CameraSides | None:
    """The correlations of one episode; None when it cannot tell the cameras apart (too short, arms alike or still).

    Raises:
        DatasetReadError: a wrist video cannot be decoded at the sampled frames.
    """
    if episode.length < SAMPLES + PAIR_FRAMES:
        return None
    starts = np.unique(np.linspace(0, episode.length - 1 - PAIR_FRAMES, SAMPLES).round().astype(int))
    speeds = {side: _arm_speed(signals, side, starts) for side in Side}
    if min(float(s.sum()) for s in speeds.values()) < MIN_ARM_TRAVEL:
        return None
    alike = _rank_correlation(speeds[Side.LEFT], speeds[Side.RIGHT])
    if not alike < ALIKE_CORRELATION:  # NaN (an arm at one speed throughout) too
        return None
    own, cross = {}, {}
    for side in Side:
        change = picture_change(episode.video(wrist_view(side)), starts, episode.fps)
        other = Side.RIGHT if side is Side.LEFT else Side.LEFT
        own[side] = _rank_correlation(change, speeds[side])
        cross[side] = _rank_correlation(change, speeds[other])
    if not all(np.isfinite([*own.values(), *cross.values()])):
        return None
    return CameraSides(own, cross, alike)


def picture_change(segment: VideoSegment, starts: np.ndarray, fps: int) -> np.ndarray:
    """Mean absolute change (0..255) of a shrunk grey picture between frame s and s + PAIR_FRAMES, per start s.

    Raises:
        DatasetReadError: the file cannot be decoded, or holds no frame near a sampled time.
    """
    times = [segment.file_time_s(int(s) + k, fps) for s in starts for k in (0, PAIR_FRAMES)]
    pictures = _grey_pictures(segment.path, times, tolerance_s=0.5 / fps)
    return np.abs(pictures[1::2] - pictures[0::2]).mean(axis=(1, 2))


def _grey_pictures(path: Path, times_s: list[float], tolerance_s: float) -> np.ndarray:
    """(times, h, PICTURE_CELLS) grey pictures at ascending times in a file, shrunk by the decoder itself.

    Seeks when the next time is more than SEEK_AHEAD_S ahead (LeRobot keeps a keyframe every 2
    frames, so a seek decodes one or two frames where reading on would decode dozens).
    """
    pictures = []
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            time_base = float(stream.time_base)
            frames, current = None, None
            for target in times_s:
                if frames is None or current is None or not -tolerance_s <= target - current[0] <= SEEK_AHEAD_S:
                    container.seek(max(0, int((target - tolerance_s) / time_base)), backward=True, stream=stream)
                    frames, current = container.decode(stream), None
                while current is None or current[0] < target - tolerance_s:
                    frame = next(frames, None)
                    if frame is None:
                        break
                    if frame.pts is not None:
                        current = (frame.pts * time_base, frame)
                if current is None or abs(current[0] - target) > tolerance_s:
                    raise DatasetReadError(f"{path}: no frame within {tolerance_s * 1000:.0f} ms of {target:.3f} s")
                frame = current[1]
                height = max(1, round(PICTURE_CELLS * frame.height / frame.width))
                small = frame.reformat(width=PICTURE_CELLS, height=height, format="gray", interpolation="AREA")
                pictures.append(small.to_ndarray().astype(np.float32))
    except (av.FFmpegError, OSError) as e:
        raise DatasetReadError(f"cannot decode {path}: {e}") from e
    return np.stack(pictures)


def _arm_speed(signals: EpisodeSignals, side: Side, starts: np.ndarray) -> np.ndarray:
    """Summed absolute travel of an arm's commanded body joints over each pair's frames, joint units.

    The actions, not the state: swapped state blocks (state_sides' business) would otherwise read as
    swapped cameras. The follower trails its command by a few frames, but motion is smooth over that
    span: on the virtual rig the margins came out alike with the actions taken 0, 2 or 4 frames earlier.
    """
    action = np.asarray(signals.action[:, body_columns(signals, side)], dtype=np.float64)
    return np.abs(action[starts + PAIR_FRAMES] - action[starts]).sum(axis=1)


def _rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (tied values share their mean rank: a still arm's zeros); NaN if one is flat."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(np.corrcoef(_ranks(a), _ranks(b))[0, 1])


def _ranks(values: np.ndarray) -> np.ndarray:
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts
    return (first + (counts - 1) / 2.0)[inverse]


def _swapped(root: Path, ep: EpisodeRecord, sides: CameraSides) -> str:
    left, right = ep.video(wrist_view(Side.LEFT)).camera, ep.video(wrist_view(Side.RIGHT)).camera
    named = "" if (left, right) == (wrist_view(Side.LEFT), wrist_view(Side.RIGHT)) else " (our wrist views)"
    return (
        f"episode {ep.index}: the {left} and {right} videos{named} look swapped: {left} moves with the right arm "
        f"(rank correlation {sides.cross[Side.LEFT]:.2f}, {sides.own[Side.LEFT]:.2f} with the left), {right} with "
        f"the left arm ({sides.cross[Side.RIGHT]:.2f}, {sides.own[Side.RIGHT]:.2f} with the right); exchange "
        f"observation.images.{left} and observation.images.{right} back where the dataset was written (or map them "
        f"with --dataset.views=left_wrist:{right},right_wrist:{left}), then run {check_again(root)}"
    )
