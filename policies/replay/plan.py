"""What a replay is asked to do, and what it did: plain data, no behaviour.

ReplayPlan  the dataset, how it fits the rig, the episodes, the target and the pace
EpisodeRun  one episode's ticks (see log.TickTrace), its timing and how it ended
ReplayRun   every episode, the safety limits in force, and how the run ended
"""

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from policies.engine import EngineStats
from policies.replay.dataset import ReplayDataset
from policies.replay.fit import DatasetFit
from policies.replay.log import TickTrace
from policies.replay.pacing import Pace
from robot.config import RigConfig
from robot.loop_timer import LoopStats


class Target(StrEnum):
    """What the actions are sent to."""

    DRY = "dry"  # dry arms: no bus, every command checked and logged, nothing sent
    VIRTUAL = "virtual"  # the virtual rig's emulated followers
    LIVE = "live"  # the arms in the rig file (real ones move!)


@dataclass(frozen=True)
class ReplayPlan:
    """What to replay, where, and how fast."""

    dataset: ReplayDataset
    fit: DatasetFit
    episodes: tuple[int, ...]
    target: Target
    pace: Pace
    rig: RigConfig


@dataclass(frozen=True)
class EpisodeRun:
    """One episode's replay."""

    episode: int
    task: str
    recorded_actions: np.ndarray  # (n, 12) BIMANUAL_KEYS order, NaN for joints the dataset does not drive
    recorded_states: np.ndarray | None  # (n, 12) likewise, or None
    trace: TickTrace  # every tick that ran
    loop: LoopStats  # the episode loop's timing
    stopped_by: str  # "done", or why it ended early
    ease_in_ticks: int  # ticks spent moving to the first action before the episode (0 for dry arms)
    wall_s: float  # real time the episode's loop took, s
    engine: EngineStats | None  # policy runs: the engine's counters for this episode
    arm_commands: dict[str, np.ndarray] | None  # dry arms: every goal each arm received, (m, 6) per arm
    ease_in_max_step_deg: float = 0.0  # the ease-in's largest per-tick goal change of a body joint, degrees

    @property
    def complete(self) -> bool:
        """Whether every recorded frame was replayed."""
        return len(self.trace.frames) == len(self.recorded_actions)


@dataclass(frozen=True)
class ReplayRun:
    """A whole replay."""

    plan: ReplayPlan
    limits: dict[str, tuple[float, float]]  # rig key -> (low, high) the safety layer allows
    episodes: tuple[EpisodeRun, ...]
    stopped_by: str  # "done", "Ctrl-C", "q", or a safety stop
    policy: str | None  # what produced the actions of a policy run
    policy_notes: tuple[str, ...]
