"""The policy of an open-loop dry run: a checkpoint behind the real inference engine, or the recording.

    policy = open_policy(options, engine, cameras, fps=30, realtime=False)   # contract checked first
    policy.begin_episode(episode_actions)               # between episodes: engine reset
    source = PolicyReplaySource(policy.engine, ...)    # the loop asks the engine every tick

A checkpoint is read, checked against what the dataset provides (its cameras and sizes, the
rig's 12 joints) before any weights load, loaded with LeRobot's processors, wrapped in
`LeRobotPredictor` and handed to the engine `make_engine` builds (sync by default: one chunk
whenever the queue runs dry, on the loop's thread; async and RTC overlap inference with the
ticks and need real-time pacing).

`--policy.path=recorded` puts `RecordedActionPredictor` behind the same engine: its chunk for the
observation of frame k is the recorded actions k, k+1, ... The replay's comparison must then find
(near) zero error: a check of the measurement itself.

The replay's `PolicyInput.time_s` is the observation's time on the dataset's clock (frame / fps,
from the episode's start), which is how the recorded predictor finds its frame.
"""

from dataclasses import dataclass

import numpy as np

from policies.engine import InferenceEngine, PolicyInput
from policies.engines.config import EngineConfig, EngineKind
from policies.engines.factory import make_engine
from policies.replay.errors import ReplayOptionError
from policies.runner import PolicyOptions, PolicyRunner

RECORDED = "recorded"  # --policy.path value that selects the recorded-actions predictor


class RecordedActionPredictor:
    """A `ChunkPredictor` whose chunk for frame k is the recorded actions k, k+1, ... (padded with the last)."""

    def __init__(self, fps: float, chunk_size: int = 10) -> None:
        self.fps = fps
        self.chunk_size = chunk_size
        self.actions = np.zeros((1, 12), np.float32)
        self.calls = 0

    def use_episode(self, actions: np.ndarray) -> None:
        """The episode the next observations come from (float (n, 12); NaN columns become 0)."""
        self.actions = np.nan_to_num(np.asarray(actions, dtype=np.float32), nan=0.0)

    def predict_chunk(
        self, inputs: PolicyInput, *, inference_delay: int = 0, leftover: np.ndarray | None = None
    ) -> np.ndarray:
        """Recorded actions from the frame of `inputs.time_s` on."""
        self.calls += 1
        frame = min(max(round(inputs.time_s * self.fps), 0), len(self.actions) - 1)
        rows = np.arange(frame, frame + self.chunk_size).clip(max=len(self.actions) - 1)
        return self.actions[rows].copy()

    def reset(self) -> None:
        """Nothing carried between chunks."""


@dataclass
class ReplayPolicy:
    """An engine over a predictor, with what the report says about it."""

    engine: InferenceEngine
    description: str  # e.g. "act checkpoint outputs/act (sync engine)"
    kind: str  # the engine kind built
    notes: tuple[str, ...] = ()  # contract notes and engine notices
    recorded: RecordedActionPredictor | None = None

    def begin_episode(self, actions: np.ndarray) -> None:
        """Forget the last episode (queued actions, model state); the recorded predictor loads this one."""
        self.engine.reset()
        if self.recorded is not None:
            self.recorded.use_episode(actions)

    def close(self) -> None:
        """Stop the engine's background work."""
        self.engine.close()


def open_policy(
    options: PolicyOptions, engine: EngineConfig, cameras: dict[str, tuple[int, int]], *, fps: float, realtime: bool
) -> ReplayPolicy:
    """Build the engine and predictor for a dry run (the contract is checked before weights load).

    Args:
        options: the policy options (so101-deploy's: the same PolicyRunner reads, checks and loads).
        engine: the engine options.
        cameras: the dataset's cameras, name -> (height, width): what the policy will be shown.
        fps: the replay rate.
        realtime: whether the loop runs at real-time pace (engines other than sync need it).

    Raises:
        ReplayOptionError: an engine that needs real time at fast pace, or the remote engine.
        CheckpointError, ContractError, DeviceError: from loading the checkpoint.
    """
    kind = engine.kind
    if kind is EngineKind.REMOTE:
        raise ReplayOptionError("engine.kind=remote is not available in a dry run; use sync, async, rtc or ensemble")
    if kind is not EngineKind.SYNC and not realtime:
        raise ReplayOptionError(
            f"engine.kind={kind} overlaps inference with the ticks, so it needs real-time pacing. Next: add"
            " --pace=realtime, or use --engine.kind=sync (fast pacing computes each chunk in line)"
        )
    if options.path.strip() == RECORDED:
        predictor = RecordedActionPredictor(fps)
        choice = make_engine(engine, predictor, fps=fps)
        return ReplayPolicy(
            choice.engine,
            f"the recorded actions ({choice.kind} engine)",
            str(choice.kind),
            (choice.notice,) if choice.notice else (),
            recorded=predictor,
        )
    from policies.contract import RigSpec

    runner = PolicyRunner(options)
    checked = runner.check(RigSpec(cameras=cameras))
    choice = make_engine(engine, runner.load(checked).predictor, fps=fps)
    contract = checked.contract
    notes = (*contract.notes, *((choice.notice,) if choice.notice else ()))
    description = f"{checked.checkpoint.features.policy_type} checkpoint {options.path} ({choice.kind} engine)"
    return ReplayPolicy(choice.engine, description, str(choice.kind), notes)
