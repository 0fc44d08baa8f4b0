from pathlib import Path

import numpy as np
import pytest

from evaluation.episode_source import open_dataset
from evaluation.errors import ConfigError, FrameDecodeError
from evaluation.judge.events import EventConfig, find_events
from evaluation.judge.evidence import JpegCache, build_pack, decode_plans
from evaluation.judge.frame_selection import FrameConfig, FramePlan, PlannedFrame, perturb, plan_frames
from evaluation.judge.video_frames import decode_frames
from evaluation.rubric import load_rubric
from evaluation.testing.synthetic_dataset import decode_code
from evaluation.vocabulary import Phase
from robot.joints import CAMERA_ROLES
from teleop.dataset.vocabulary import camera_key
from tests.evaluation.judge.judge_testkit import FRAMES_PER_EPISODE


def _plan(dataset_root: Path, index: int, config: FrameConfig | None = None) -> tuple[object, FramePlan]:
    source = open_dataset(dataset_root)
    episode = source.episode(index)
    events = find_events(source.signals(episode), EventConfig())
    return episode, plan_frames(events, load_rubric(), config or FrameConfig(), episode.views, index)


def test_episodes_share_one_video_file_with_offsets(dataset_root: Path):
    source = open_dataset(dataset_root)
    paths = {seg.path for ep in source.episodes for seg in ep.videos if seg.view == "overhead"}
    assert len(paths) == 1
    starts = [ep.video("overhead").from_timestamp_s for ep in source.episodes]
    assert starts == pytest.approx([k * FRAMES_PER_EPISODE / 30 for k in range(5)])


def test_selected_frames_equal_lerobots_decoded_frames_at_the_right_times(dataset_root: Path):
    """Pixel comparison on a file holding five episodes: our decoder vs LeRobotDataset[index] (PyAV)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    reference = LeRobotDataset("synthetic/fold_virtual", root=dataset_root, video_backend="pyav")
    for index in (3, 1):  # a later episode first: the decoder must seek backwards too
        episode, plan = _plan(dataset_root, index)
        decoded = decode_plans(episode, [plan])
        assert len(decoded) == plan.num_images
        first_row = int(reference.meta.episodes[index]["dataset_from_index"])
        for (view, frame_index), frame in decoded.items():
            assert decode_code(frame.image) == (index, frame_index, CAMERA_ROLES.index(view))
            item = reference[first_row + frame_index]
            expected = (item[camera_key(view)].numpy().transpose(1, 2, 0) * 255).round().astype(np.uint8)
            np.testing.assert_array_equal(frame.image, expected)
            assert frame.decoded_time_s == pytest.approx(episode.video(view).file_time_s(frame_index, 30), abs=1e-3)


def test_decoder_returns_frames_in_request_order_with_duplicates(dataset_root: Path):
    episode = open_dataset(dataset_root).episode(4)
    seg = episode.video("left_wrist")
    frames = [89, 0, 45, 45, 1]
    out = decode_frames(seg.path, [seg.file_time_s(i, 30) for i in frames], tolerance_s=0.5 / 30)
    assert [decode_code(f.image) for f in out] == [(4, i, 0) for i in frames]


def test_time_past_the_end_of_the_video_is_an_error(dataset_root: Path):
    seg = open_dataset(dataset_root).episode(4).video("overhead")
    with pytest.raises(FrameDecodeError, match="no frame within"):
        decode_frames(seg.path, [seg.to_timestamp_s + 5.0], tolerance_s=0.5 / 30)


def test_plan_places_keyframes_at_events_and_respects_the_budget(dataset_root: Path):
    config = FrameConfig(num_keyframes=8, max_images=14)
    _, plan = _plan(dataset_root, 0, config)
    assert len(plan.frames) <= 8
    assert plan.num_images <= 14
    phases = {p for f in plan.frames for p, _ in f.phases}
    assert {Phase.START, Phase.FINAL, Phase.GRASP, Phase.RELEASE} <= phases
    final = plan.frames[-1]
    assert final.frame_index == FRAMES_PER_EPISODE - 1
    assert final.views[0] == "overhead"
    grasp = next(f for f in plan.frames if any(p == Phase.GRASP for p, _ in f.phases))
    assert {"left_wrist", "right_wrist"} <= set(grasp.views)
    assert [f.frame_index for f in plan.frames] == sorted({f.frame_index for f in plan.frames})


def test_idle_episode_is_filled_uniformly_from_above(dataset_root: Path):
    _, plan = _plan(dataset_root, 1, FrameConfig(num_keyframes=6))
    indices = [f.frame_index for f in plan.frames]
    assert len(indices) == 6
    assert indices[0] == 0
    assert indices[-1] == FRAMES_PER_EPISODE - 1
    gaps = np.diff(indices)
    assert gaps.max() - gaps.min() <= 2
    assert all(f.views == ("overhead",) for f in plan.frames[1:-1])


def test_perturbation_is_deterministic_keeps_start_and_final_and_rotates_views():
    plan = FramePlan(
        0,
        0,
        30,
        (
            PlannedFrame(0, ((Phase.START, None),), ("overhead", "left_wrist")),
            PlannedFrame(40, ((Phase.FILL, None),), ("overhead",)),
            PlannedFrame(60, ((Phase.FILL, None),), ("overhead", "left_wrist", "right_wrist")),
            PlannedFrame(89, ((Phase.FINAL, None),), ("overhead", "left_wrist", "right_wrist")),
        ),
    )
    config = FrameConfig(jitter_s=0.3)
    assert perturb(plan, 0, config, 90, "seed") is plan
    a, b = perturb(plan, 1, config, 90, "seed"), perturb(plan, 1, config, 90, "seed")
    assert a == b
    assert a.frames[0].frame_index == 0
    assert a.frames[-1].frame_index == 89
    assert a.frames[-1].views == ("left_wrist", "right_wrist", "overhead")
    moved = [abs(x.frame_index - y.frame_index) for x, y in zip(a.frames, plan.frames, strict=True)]
    assert max(moved) <= 9
    others = [perturb(plan, k, config, 90, "seed").frames[1].frame_index for k in range(1, 8)]
    assert len(set(others)) > 1  # samples differ from each other


def test_evidence_labels_carry_view_time_frame_and_hash(dataset_root: Path):
    source = open_dataset(dataset_root)
    episode, plan = _plan(dataset_root, 2)
    pack = build_pack(episode, plan, decode_plans(episode, [plan]), JpegCache(90), source.root)
    image = pack.images[0]
    assert image.label().startswith(f"[{image.view}@{image.time_s:.2f}s | view {image.view} | t=")
    assert image.jpeg[:2] == b"\xff\xd8"
    assert (image.width, image.height) == (128, 96)
    manifest = image.manifest()
    assert manifest["video_path"].startswith("videos/observation.images.")
    assert len(manifest["sha256"]) == 64
    assert "jpeg" not in manifest


def test_frame_config_validation():
    with pytest.raises(ConfigError, match="max_images"):
        FrameConfig(num_keyframes=10, max_images=5)
    with pytest.raises(ConfigError, match="fill_views"):
        FrameConfig(fill_views=("ceiling",))
