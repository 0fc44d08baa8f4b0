"""The remote engine's wire format and tick queue, checked against LeRobot's own helpers without a server."""

import os
import pickle
import threading

import numpy as np
import pytest

from policies.engine import PolicyInput
from policies.engines.blend import BlendMode, crossfade_weights
from policies.engines.remote_queue import TickQueue
from policies.engines.remote_wire import (
    decode_chunk,
    observation_bytes,
    observation_pieces,
    rig_lerobot_features,
)
from policies.errors import RemotePolicyError
from policies.testing.tiny_policies import TEST_CAMERAS
from robot.joints import BIMANUAL_KEYS
from tests.support.policy_inputs import synthetic_input

# --- wire format, no server -------------------------------------------------------------------


def test_features_sent_are_what_lerobots_robot_client_sends_for_a_bi_so_follower(tmp_path):
    from lerobot.async_inference.helpers import map_robot_keys_to_lerobot_features
    from lerobot.cameras.opencv import OpenCVCameraConfig
    from lerobot.robots.bi_so_follower import BiSOFollower, BiSOFollowerConfig
    from lerobot.robots.so_follower import SOFollowerConfig

    def camera(height: int, width: int) -> OpenCVCameraConfig:
        return OpenCVCameraConfig(index_or_path=0, fps=30, width=width, height=height)

    shapes = {name: (h, w) for name, h, w in TEST_CAMERAS}
    robot = BiSOFollower(
        BiSOFollowerConfig(
            id="probe",
            calibration_dir=tmp_path,
            left_arm_config=SOFollowerConfig(port="/dev/null", cameras={"wrist": camera(*shapes["left_wrist"])}),
            right_arm_config=SOFollowerConfig(port="/dev/null", cameras={"wrist": camera(*shapes["right_wrist"])}),
            cameras={"overhead": camera(*shapes["overhead"])},
        )
    )
    ours = rig_lerobot_features(TEST_CAMERAS)
    assert ours == map_robot_keys_to_lerobot_features(robot)
    assert ours["observation.state"]["names"] == list(BIMANUAL_KEYS)
    assert ours["observation.images.overhead"]["shape"] == (96, 128, 3)


def test_an_observation_is_a_must_go_timed_observation_of_the_rigs_raw_keys():
    inputs = synthetic_input(3)
    timed = pickle.loads(observation_bytes(inputs, TEST_CAMERAS, tick_index=41))
    assert timed.get_timestep() == 41
    assert timed.must_go
    raw = timed.get_observation()
    assert [k for k in raw if k.endswith(".pos")] == list(BIMANUAL_KEYS)
    assert raw["left_shoulder_pan.pos"] == pytest.approx(float(inputs.state[0]))
    assert raw["task"] == "Fold the cloth"
    assert raw["overhead"] is not inputs.images["overhead"]  # a copy went over the wire
    np.testing.assert_array_equal(raw["overhead"], inputs.images["overhead"])


def test_observations_the_rig_does_not_declare_are_refused():
    inputs = synthetic_input(0)
    renamed = PolicyInput(inputs.state, {**inputs.images, "top": inputs.images["overhead"]}, "t", 0.0)
    with pytest.raises(RemotePolicyError, match="top"):
        observation_bytes(renamed, TEST_CAMERAS, 0)
    with pytest.raises(RemotePolicyError, match=r"expected \(12,\)"):
        observation_bytes(PolicyInput(inputs.state[:6], inputs.images, "t", 0.0), TEST_CAMERAS, 0)


def test_large_observations_go_in_pieces_that_lerobots_receiver_reassembles():
    from lerobot.transport import services_pb2
    from lerobot.transport.utils import receive_bytes_in_chunks

    payload = os.urandom(5 * 1024 * 1024 + 17)
    pieces = list(observation_pieces(payload))
    assert [p.transfer_state for p in pieces] == [
        services_pb2.TRANSFER_BEGIN,
        services_pb2.TRANSFER_MIDDLE,
        services_pb2.TRANSFER_END,
    ]
    assert receive_bytes_in_chunks(iter(pieces), None, threading.Event()) == payload
    small = list(observation_pieces(b"abc"))
    assert [p.transfer_state for p in small] == [services_pb2.TRANSFER_END]


def test_chunks_decode_to_consecutive_timesteps_and_twelve_values():
    import torch
    from lerobot.async_inference.helpers import TimedAction

    actions = torch.arange(36, dtype=torch.float32).reshape(3, 12)
    data = pickle.dumps([TimedAction(timestamp=0.0, timestep=7 + i, action=a) for i, a in enumerate(actions)])
    first, decoded = decode_chunk(data)
    assert first == 7
    assert decoded.dtype == np.float32
    np.testing.assert_array_equal(decoded, actions.numpy())


def test_a_single_arm_chunk_is_refused_with_the_reason():
    import torch
    from lerobot.async_inference.helpers import TimedAction

    data = pickle.dumps([TimedAction(timestamp=0.0, timestep=0, action=torch.zeros(6))])
    with pytest.raises(RemotePolicyError, match=r"bimanual"):
        decode_chunk(data)


class _Payload:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_a_chunk_that_would_run_code_is_refused_before_anything_runs():
    with pytest.raises(RemotePolicyError, match=r"posix.system is not allowed|os.system is not allowed"):
        decode_chunk(pickle.dumps([_Payload()]))
    with pytest.raises(RemotePolicyError, match="cannot be decoded"):
        decode_chunk(b"not a pickle")


# --- the tick queue ---------------------------------------------------------------------------


def chunk(first_value: float, n: int) -> np.ndarray:
    return np.repeat(np.arange(first_value, first_value + n, dtype=np.float32)[:, None], 12, axis=1)


def test_a_chunk_is_aligned_by_tick_and_what_is_past_is_dropped():
    queue = TickQueue()
    assert queue.take(0) is None
    assert queue.take(1) is None
    kept = queue.merge(0, chunk(100, 5), chunk_id=0, latency_s=0.05)  # computed from tick 0, arrives after tick 1
    assert kept == 3
    action = queue.take(2)
    assert action.values[0] == 102  # the chunk's action for tick 2, not its first one
    assert (action.chunk_id, action.index_in_chunk) == (0, 2)
    assert queue.take(4).values[0] == 104  # tick 3 was skipped (an overrun): its action is dropped
    assert len(queue) == 0
    assert queue.take(5) is None


def test_crossfade_blends_the_overlap_with_exact_weights_then_takes_the_new_chunk():
    queue = TickQueue(BlendMode.CROSSFADE)
    queue.merge(0, chunk(0, 6), chunk_id=0, latency_s=0.0)  # old plan: ticks 0..5 -> 0..5
    queue.take(0)
    queue.take(1)
    queue.merge(1, np.full((8, 12), 50.0, np.float32), chunk_id=1, latency_s=0.0)  # new plan: ticks 1..8 -> 50
    # Past: tick 1. Overlap: ticks 2..5 (m = 4), weights 1/5 .. 4/5; ticks 6..8 are new only.
    np.testing.assert_allclose(crossfade_weights(4), [0.2, 0.4, 0.6, 0.8])
    got = [queue.take(t).values[0] for t in range(2, 9)]
    expected = [0.8 * 2 + 0.2 * 50, 0.6 * 3 + 0.4 * 50, 0.4 * 4 + 0.6 * 50, 0.2 * 5 + 0.8 * 50, 50, 50, 50]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_replace_takes_the_new_chunk_and_drops_the_old_plan_beyond_it():
    queue = TickQueue(BlendMode.REPLACE)
    queue.merge(0, chunk(0, 10), chunk_id=0, latency_s=0.0)
    queue.take(0)
    queue.merge(0, chunk(100, 4), chunk_id=1, latency_s=0.0)  # shorter: ticks 1..3 only
    assert [queue.take(t).values[0] for t in (1, 2, 3)] == [101, 102, 103]
    assert queue.take(4) is None  # never the older plan after a newer one
