"""LeRobotPredictor: one loaded ACT or SmolVLA policy as a `ChunkPredictor`.

    PolicyInput (state in BIMANUAL_KEYS order, rig camera frames, task)
        │  contract: state reordered to the checkpoint's joints, frames keyed as the checkpoint expects
        ▼
    prepare_observation_for_inference (LeRobot: float CHW in [0, 1], batch dim) -> preprocessor
        ▼
    policy.predict_action_chunk  (SmolVLA with RTC: inference_delay, prev_chunk_left_over)
        ▼
    postprocessor (unnormalize, CPU) -> float32 (chunk_size, 12) in BIMANUAL_KEYS order, all finite

The same LeRobot calls `lerobot-rollout` makes for one chunk; only the key mapping around them is
ours. Calls are serialised by a lock (one inference at a time); an engine calls it from its worker.
"""

import logging
import os
import threading
from collections.abc import Callable
from contextlib import nullcontext

import numpy as np
import torch

from policies.checkpoint import LoadedPolicy
from policies.contract import Contract
from policies.engine import PolicyInput
from policies.errors import InferenceError, NonFiniteActionError
from policies.lerobot_policy import action_normalizer, prepare_observation
from robot.joints import BIMANUAL_KEYS
from teleop.dataset.vocabulary import STATE_KEY

logger = logging.getLogger(__name__)

ROBOT_TYPE = "bi_so_follower"  # what LeRobot's bimanual SO follower reports, and our datasets record


def default_num_threads() -> int:
    """CPU threads for inference: every core on small machines, all but one (for the loop) on larger ones."""
    cores = os.cpu_count() or 1
    return cores if cores <= 2 else cores - 1


class LeRobotPredictor:
    """Chunks of post-processed actions from a loaded LeRobot policy (see module docstring)."""

    def __init__(
        self,
        loaded: LoadedPolicy,
        contract: Contract,
        *,
        num_threads: int | None = None,
        forward: Callable[..., torch.Tensor] | None = None,
    ) -> None:
        """Wrap `loaded`, mapping rig data through `contract` (from `check_contract`).

        `num_threads`: torch CPU threads (process-wide); None = `default_num_threads()` on a CPU
        device, unchanged on a GPU. `forward`: what computes a chunk from the preprocessed batch in
        place of `policy.predict_action_chunk` (the compiled runtime's, same arguments and result).
        """
        features = loaded.checkpoint.features
        self.chunk_size = features.chunk_size  # actions per chunk (the model's whole chunk)
        self.n_action_steps = features.n_action_steps  # actions per chunk the checkpoint was set to execute
        self.rtc_enabled = features.rtc_enabled  # SmolVLA real-time chunking: uses inference_delay and leftover
        self._loaded = loaded
        self._forward = forward  # None: the policy's own, looked up per call
        self._device = loaded.device
        self._state_index = np.asarray(contract.state_index, dtype=np.int64)
        self._action_index = np.asarray(contract.action_index, dtype=np.int64)
        self._camera_keys = dict(contract.camera_keys)
        self._lock = threading.Lock()
        self._amp = bool(getattr(loaded.checkpoint.config, "use_amp", False)) and self._device.type == "cuda"
        self._normalize_action = action_normalizer(loaded.postprocessor) if self.rtc_enabled else None
        if self._device.type == "cpu" or num_threads is not None:
            torch.set_num_threads(num_threads or default_num_threads())

    def predict_chunk(
        self, inputs: PolicyInput, *, inference_delay: int = 0, leftover: np.ndarray | None = None
    ) -> np.ndarray:
        """A float32 (chunk_size, 12) chunk in BIMANUAL_KEYS order, in the rig's units.

        `inference_delay` and `leftover` ((k, 12) post-processed actions not yet executed) are passed
        to SmolVLA when its config enables RTC, and ignored otherwise.

        Raises:
            NonFiniteActionError: the policy produced NaN or inf (nothing of the chunk may be sent).
            InferenceError: the observation lacks a camera, or the policy failed.
        """
        observation = self._observation(inputs)
        with self._lock:
            try:
                chunk = self._run(observation, inputs.task, inference_delay, leftover)
            except InferenceError:
                raise
            except Exception as error:  # torch and LeRobot raise anything from shape errors to CUDA OOM
                raise InferenceError(
                    f"the {self._loaded.checkpoint.features.policy_type} policy failed on {self._device}:"
                    f" {type(error).__name__}: {error}"
                ) from error
        _check_finite(chunk)
        return chunk

    def reset(self) -> None:
        """Forget the policy's and processors' internal state (between episodes)."""
        with self._lock:
            self._loaded.policy.reset()
            self._loaded.preprocessor.reset()
            self._loaded.postprocessor.reset()

    def _observation(self, inputs: PolicyInput) -> dict[str, np.ndarray]:
        state = np.asarray(inputs.state, dtype=np.float32)
        if state.shape != (len(BIMANUAL_KEYS),):
            raise InferenceError(
                f"state has shape {state.shape}; expected ({len(BIMANUAL_KEYS)},) in BIMANUAL_KEYS order"
            )
        observation = {STATE_KEY: state[self._state_index]} if self._state_index.size else {}
        for name, key in self._camera_keys.items():
            image = inputs.images.get(name)
            if image is None:
                raise InferenceError(f"camera {name!r} gave no frame this tick; the policy needs it as {key!r}")
            # Frames come read-only from the camera rings; torch.from_numpy (inside LeRobot) wants its own.
            observation[key] = np.array(image, copy=True) if not image.flags.writeable else np.ascontiguousarray(image)
        return observation

    def _run(
        self, observation: dict[str, np.ndarray], task: str, inference_delay: int, leftover: np.ndarray | None
    ) -> np.ndarray:
        loaded = self._loaded
        autocast = torch.autocast(device_type="cuda") if self._amp else nullcontext()
        # RTC guides the flow with autograd, which inference-mode tensors cannot join: no_grad then.
        grad_off = torch.no_grad() if self.rtc_enabled else torch.inference_mode()
        with grad_off, autocast:
            batch = prepare_observation(observation, self._device, task, ROBOT_TYPE)
            batch = loaded.preprocessor(batch)
            options = {}
            if self.rtc_enabled:
                options = {"inference_delay": int(inference_delay), "prev_chunk_left_over": self._leftover(leftover)}
            forward = self._forward or loaded.policy.predict_action_chunk
            actions = forward(batch, **options)
            actions = loaded.postprocessor(actions)
        chunk = actions.detach().to("cpu", torch.float32).numpy().reshape(-1, actions.shape[-1])
        return np.ascontiguousarray(chunk[:, self._action_index], dtype=np.float32)

    def _leftover(self, leftover: np.ndarray | None) -> torch.Tensor | None:
        """Post-processed rig actions back into the model's normalized action space (as RTC expects)."""
        if leftover is None or len(leftover) == 0 or self._normalize_action is None:
            return None
        rig = np.asarray(leftover, dtype=np.float32).reshape(-1, len(BIMANUAL_KEYS))[: self.chunk_size]
        model_order = rig[:, np.argsort(self._action_index)]
        return self._normalize_action(torch.from_numpy(model_order)).to(self._device)


def _check_finite(chunk: np.ndarray) -> None:
    bad = ~np.isfinite(chunk)
    if bad.any():
        rows, columns = np.nonzero(bad)
        joints = sorted({BIMANUAL_KEYS[column] for column in columns})
        raise NonFiniteActionError(
            f"the policy produced {int(bad.sum())} NaN/inf values (first at action {int(rows[0])}, joints {joints});"
            " nothing of this chunk is sent. Check the checkpoint's weights and normalization statistics"
        )
