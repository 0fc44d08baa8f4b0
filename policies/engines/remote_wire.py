"""What travels between our loop and LeRobot's async-inference policy server (LeRobot 0.6.1).

    client (robot PC)                          LeRobot policy server (GPU machine)
    Ready(Empty)                          ──>  forget the previous client (one client at a time)
    SendPolicyInstructions(PolicySetup)   ──>  pickled RemotePolicyConfig: policy type, checkpoint,
                                               LeRobot features of the robot, actions per chunk, device;
                                               the server loads the policy and its processors
    SendObservations(stream Observation)  ──>  pickled TimedObservation(timestamp, timestep, raw
                                               observation, must_go) in pieces of at most 2 MiB
    GetActions(Empty)                     <──  Actions: pickled list[TimedAction], action i for timestep
                                               `observation timestep + i`; empty bytes: no chunk

The raw observation is what LeRobot's `bi_so_follower` returns from `get_observation()`: one float
per joint key (`left_shoulder_pan.pos` ...), one uint8 (h, w, 3) RGB image per camera name, plus
the task text. The server turns it into a policy batch with the features we declared, resizes the
images to the checkpoint's image size and runs the pre-processor, the policy and the post-processor,
so the actions come back in rig units, in the checkpoint's action order (BIMANUAL_KEYS for a
bimanual checkpoint).

Pickle is LeRobot's format both ways. Unpickling what a server sends could run any code it chose,
so chunks are decoded with an allow-list: `TimedAction`, torch tensors (their storages loaded with
`torch.load(weights_only=True)`) and nothing else.
"""

import io
import math
import pickle
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from policies.engine import PolicyInput
from policies.errors import RemotePolicyError
from robot.cameras.shape import CameraShape
from robot.joints import BIMANUAL_KEYS

OBSERVATION_PREFIX = "observation"
# LeRobot's transport splits messages into pieces of this size (its gRPC limit is 4 MiB per message).
PIECE_BYTES = 2 * 1024 * 1024
# The policy types LeRobot's server accepts (lerobot.async_inference.constants.SUPPORTED_POLICIES).
SUPPORTED_POLICY_TYPES = ("act", "smolvla", "diffusion", "tdmpc", "vqbet", "pi0", "pi05", "groot")


def transport() -> tuple[Any, Any]:
    """LeRobot's gRPC messages and service stubs (`services_pb2`, `services_pb2_grpc`).

    Raises:
        ImportError: LeRobot's async-inference extra (gRPC, protobuf) is not installed.
    """
    from lerobot.transport import services_pb2, services_pb2_grpc

    return services_pb2, services_pb2_grpc


def rig_lerobot_features(cameras: Sequence[CameraShape]) -> dict[str, dict]:
    """The `lerobot_features` LeRobot's robot client sends for a `bi_so_follower` with these cameras.

    Built with LeRobot's own `hw_to_dataset_features` from the robot's observation features (12
    joint floats, one (h, w, 3) image per camera), exactly as `RobotClient` does from a connected robot.
    """
    from lerobot.utils.feature_utils import hw_to_dataset_features

    hardware: dict[str, Any] = dict.fromkeys(BIMANUAL_KEYS, float)
    hardware.update({name: (height, width, 3) for name, height, width in cameras})
    return hw_to_dataset_features(hardware, OBSERVATION_PREFIX, use_video=False)


def policy_setup_bytes(
    *,
    policy_type: str,
    checkpoint: str,
    cameras: Sequence[CameraShape],
    actions_per_chunk: int,
    device: str,
    rename_map: Mapping[str, str],
) -> bytes:
    """The pickled `RemotePolicyConfig` of a `SendPolicyInstructions` call."""
    from lerobot.async_inference.helpers import RemotePolicyConfig

    config = RemotePolicyConfig(
        policy_type=policy_type,
        pretrained_name_or_path=checkpoint,
        lerobot_features=rig_lerobot_features(cameras),
        actions_per_chunk=actions_per_chunk,
        device=device,
        rename_map=dict(rename_map),
    )
    return pickle.dumps(config)


def raw_observation(inputs: PolicyInput, cameras: Sequence[CameraShape]) -> dict[str, Any]:
    """The observation dict a `bi_so_follower` would return, plus the task text.

    Raises:
        RemotePolicyError: the state is not 12 values, or the images are not the declared cameras.
    """
    state = np.asarray(inputs.state, dtype=np.float32)
    if state.shape != (len(BIMANUAL_KEYS),):
        raise RemotePolicyError(f"observation state has shape {state.shape}; expected ({len(BIMANUAL_KEYS)},)")
    expected = {name: (height, width, 3) for name, height, width in cameras}
    if set(inputs.images) != set(expected):
        raise RemotePolicyError(
            f"observation cameras {sorted(inputs.images)} differ from those declared to the policy server "
            f"{sorted(expected)}"
        )
    observation: dict[str, Any] = {key: float(value) for key, value in zip(BIMANUAL_KEYS, state, strict=True)}
    for name, image in inputs.images.items():
        if image.shape != expected[name] or image.dtype != np.uint8:
            raise RemotePolicyError(
                f"camera {name!r} image is {image.dtype} {image.shape}; declared uint8 {expected[name]}"
            )
        observation[name] = image
    observation["task"] = inputs.task
    return observation


def observation_bytes(inputs: PolicyInput, cameras: Sequence[CameraShape], tick_index: int) -> bytes:
    """A pickled `TimedObservation` for tick `tick_index`, always `must_go`.

    We only send an observation when we want a chunk for it, so every one must be processed: without
    `must_go` the server skips an observation whose joints moved less than 1 (L2 over the 12 values)
    since the last one it used, which is exactly the case of an arm holding still while starved.
    """
    from lerobot.async_inference.helpers import TimedObservation

    timed = TimedObservation(
        timestamp=time.time(),  # wall clock on purpose: the server compares it with its own clock (logs only)
        timestep=tick_index,
        observation=raw_observation(inputs, cameras),
        must_go=True,
    )
    return pickle.dumps(timed)


def observation_pieces(payload: bytes, piece_bytes: int = PIECE_BYTES) -> Iterator[Any]:
    """The `Observation` messages of one payload: BEGIN, MIDDLE..., END (a single piece is END)."""
    from lerobot.transport import services_pb2

    count = max(1, math.ceil(len(payload) / piece_bytes))
    for index in range(count):
        if index == count - 1:
            state = services_pb2.TRANSFER_END
        elif index == 0:
            state = services_pb2.TRANSFER_BEGIN
        else:
            state = services_pb2.TRANSFER_MIDDLE
        yield services_pb2.Observation(
            transfer_state=state, data=payload[index * piece_bytes : (index + 1) * piece_bytes]
        )


def _load_storage(data: bytes) -> Any:
    import torch

    return torch.load(io.BytesIO(data), weights_only=True)


class _ChunkUnpickler(pickle.Unpickler):
    """Resolves only the globals a chunk of `TimedAction`s needs; anything else is refused."""

    def find_class(self, module: str, name: str) -> Any:
        import torch
        from lerobot.async_inference.helpers import TimedAction

        allowed = {
            ("lerobot.async_inference.helpers", "TimedAction"): TimedAction,
            ("torch._utils", "_rebuild_tensor_v2"): torch._utils._rebuild_tensor_v2,
            ("torch.storage", "_load_from_bytes"): _load_storage,
            ("collections", "OrderedDict"): OrderedDict,
        }
        if (module, name) not in allowed:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in an action chunk")
        return allowed[(module, name)]


def decode_chunk(data: bytes, action_size: int = len(BIMANUAL_KEYS)) -> tuple[int, np.ndarray]:
    """The first timestep and the float32 (n, action_size) actions of a `GetActions` reply.

    Raises:
        RemotePolicyError: the reply is not a list of consecutive `TimedAction`s of `action_size` values.
    """
    from lerobot.async_inference.helpers import TimedAction

    try:
        timed = _ChunkUnpickler(io.BytesIO(data)).load()
    except Exception as e:  # a refused global, a truncated or foreign payload: all the same to the caller
        raise RemotePolicyError(f"the policy server sent an action chunk that cannot be decoded safely: {e}") from e
    if not isinstance(timed, list) or not timed or not all(isinstance(a, TimedAction) for a in timed):
        raise RemotePolicyError(
            f"the policy server sent {type(timed).__name__} instead of a list of TimedAction; "
            "is it LeRobot 0.6.x's lerobot.async_inference.policy_server?"
        )
    first = int(timed[0].timestep)
    steps = [int(a.timestep) for a in timed]
    if steps != list(range(first, first + len(timed))):
        raise RemotePolicyError(f"the policy server sent non-consecutive timesteps {steps[:5]}...")
    actions = np.stack([np.asarray(a.action.detach().cpu().numpy(), dtype=np.float32) for a in timed])
    if actions.shape != (len(timed), action_size):
        raise RemotePolicyError(
            f"the policy server sent actions of shape {actions.shape[1:]}; the rig takes ({action_size},) "
            "(is the checkpoint for a bimanual rig, 12 joints in left_shoulder_pan.pos ... order?)"
        )
    return first, actions
