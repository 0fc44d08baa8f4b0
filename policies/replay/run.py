"""Running a replay: each episode through the same control loop and safety layer as teleop and deploy.

    for each episode:
        dry      a fresh BimanualRig of dry arms, standing where the episode was recorded
        virtual  the virtual rig (one for the run); first an ease-in to the episode's first action
        live     the real arms in the rig file; ease-in, e-stop key (e), q to stop, Ctrl-C safe
        ──> ControlLoop(rig, source, fps, hooks=[TickLog, keys]) paced in real time or as fast as possible
              source: RecordedActionSource (the actions) or PolicyReplaySource (a policy, open loop)
        <── EpisodeRun: every tick (requested, sent, observed, timing, safety events)

Nothing here decides what is good or bad: `analysis.py` reads the runs. A safety stop (e-stop,
watchdog) ends the run; a policy error ends its episode; Ctrl-C ends the run. Each keeps what
ran so far, so the report still covers it.
"""

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np
from lerobot.motors import MotorCalibration

from policies.engine import EngineStats
from policies.errors import InferenceError
from policies.replay.dataset import EpisodeData, ReplayDataset
from policies.replay.errors import ReplayError
from policies.replay.fit import DatasetFit
from policies.replay.frames import EpisodeFrames
from policies.replay.log import TickLog, TickTrace
from policies.replay.pacing import Pace, pace
from policies.replay.policy import ReplayPolicy
from policies.replay.sources import EaseInSource, PolicyReplaySource, RecordedActionSource
from robot.config import RigConfig
from robot.control_loop import ControlLoop, Step
from robot.dry_arm import DRY_PORT, DryArm, dry_arm_factory
from robot.errors import CalibrationError
from robot.feetech.calibration_files import calibration_path, calibration_root, load_calibration
from robot.joints import BIMANUAL_KEYS, JOINT_NAMES, Role, Side, arm_name, joint_key
from robot.loop_timer import LoopStats
from robot.rig import BimanualRig, SafetyStopError
from robot.rig_ports import rig_ports
from robot.safety.config import ExitMode
from teleop.keys import Key, KeyReader

logger = logging.getLogger(__name__)
EASE_IN_TIMEOUT_S = 30.0  # the followers must reach an episode's first action within this, s


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


def dry_calibrations(rig: RigConfig) -> dict[Side, dict[str, MotorCalibration]]:
    """The followers' calibration for dry arms: the rig's files, else the virtual rig's own.

    Raises:
        CalibrationError: a real rig without calibration files.
    """
    root = calibration_root(rig.calibration.dir)
    found: dict[Side, dict[str, MotorCalibration]] = {}
    for side in Side:
        path = calibration_path(root, rig.id, side, Role.FOLLOWER)
        if path.is_file():
            found[side] = load_calibration(path)
        elif rig.virtual is not None:
            from robot.virtual.precalibrated import calibration_values
            from robot.virtual.rig_model import VirtualRigModel

            model = VirtualRigModel(replace(rig.virtual, state_dir=None, scenario=None))
            values = calibration_values(model, arm_name(side, Role.FOLLOWER))
            found[side] = {joint: MotorCalibration(**values[joint]) for joint in JOINT_NAMES}
        else:
            raise CalibrationError(
                f"dry arms need the calibration of rig {rig.id!r}'s followers to know their limits; there is no"
                f" file at {path}. Next: run so101-calibrate, or copy the calibration files from the rig's computer"
            )
    return found


def _start_pose(data: np.ndarray | None, actions: np.ndarray) -> dict[Side, dict[str, float]]:
    """Where dry arms stand at an episode's start: its first recorded state (else its first action)."""
    first = actions[0] if data is None else np.where(np.isnan(data[0]), actions[0], data[0])
    values = dict(zip(BIMANUAL_KEYS, first, strict=True))
    middle = {j: 50.0 if j == "gripper" else 0.0 for j in JOINT_NAMES}
    return {
        side: {j: middle[j] if np.isnan(values[joint_key(side, j)]) else float(values[joint_key(side, j)])
               for j in JOINT_NAMES}
        for side in Side
    }  # fmt: skip


class KeyHook:
    """Live replays: `e` e-stops the followers, `q` ends the run after this tick."""

    def __init__(self, keys: KeyReader, rig: BimanualRig, stop: Callable[[], None]) -> None:
        self.keys = keys
        self.rig = rig
        self.stop = stop
        self.quit = False

    def on_step(self, step: Step) -> None:
        """Poll the keyboard (never blocks)."""
        for key in self.keys.poll():
            if key is Key.ESTOP:
                self.rig.estop()
            elif key is Key.STOP:
                self.quit = True
                self.stop()


class Replayer:
    """Runs a plan's episodes; one instance per run."""

    def __init__(
        self,
        plan: ReplayPlan,
        policy: ReplayPolicy | None = None,
        *,
        task: str = "",
        prime: bool = True,
        on_event: Callable[[str], None] = logger.info,
    ) -> None:
        """A replay of `plan`; with `policy`, an open-loop policy run.

        `task` overrides the recorded task text; `prime` has the engine compute its first chunk
        before each episode's loop.
        """
        self.plan = plan
        self.policy = policy
        self.task = task
        self.prime = prime
        self.on_event = on_event
        self.limits: dict[str, tuple[float, float]] = {}
        self.stopped_by = "done"
        self._keys: KeyHook | None = None

    def run(self) -> ReplayRun:
        """Replay every episode of the plan (see the module docstring for what ends it early)."""
        runs: list[EpisodeRun] = []
        try:
            if self.plan.target is Target.DRY:
                self._run_dry(runs)
            else:
                self._run_rig(runs)
        except KeyboardInterrupt:
            self.stopped_by = "Ctrl-C"
        finally:
            if self.policy is not None:
                self.policy.close()
        return ReplayRun(
            plan=self.plan,
            limits=self.limits,
            episodes=tuple(runs),
            stopped_by=self.stopped_by,
            policy=self.policy.description if self.policy else None,
            policy_notes=self.policy.notes if self.policy else (),
        )

    # --- targets -----------------------------------------------------------------------------

    def _run_dry(self, runs: list[EpisodeRun]) -> None:
        plan = self.plan
        calibrations = dry_calibrations(plan.rig)
        config = replace(
            plan.rig, cameras=(), realtime_priority=0, safety=replace(plan.rig.safety, on_exit=ExitMode.HOLD)
        )
        ports = {arm_name(side, Role.FOLLOWER): DRY_PORT for side in Side}
        for index in plan.episodes:
            data = plan.dataset.load(index)
            actions, states = plan.fit.actions(data), plan.fit.states(data)
            factory = dry_arm_factory(
                calibrations, _start_pose(states, actions), calibration_root(plan.rig.calibration.dir)
            )
            with BimanualRig(config, ports, with_leaders=False, with_cameras=False, arm_factory=factory) as rig:
                self._note_limits(rig)
                run = self._episode(rig, data, actions, states, ease_in_ticks=0, realtime_priority=0)
                commands = {arm.name: np.array([[c.goal[j] for j in JOINT_NAMES] for c in arm.log]).reshape(-1, 6)
                            for arm in rig.arms.values() if isinstance(arm, DryArm)}  # fmt: skip
            runs.append(replace(run, arm_commands=commands))
            if run.stopped_by != "done" and not run.stopped_by.startswith("policy"):
                self.stopped_by = run.stopped_by
                return

    def _run_rig(self, runs: list[EpisodeRun]) -> None:
        plan = self.plan
        with rig_ports(plan.rig) as found:
            rig = BimanualRig(plan.rig, found.ports, with_leaders=False, with_cameras=False)
            live = plan.target is Target.LIVE
            with rig, KeyReader() if live else nullcontext() as keys:
                self._note_limits(rig)
                if live and keys is not None and keys.enabled:
                    self.on_event("keys: e e-stop (freeze, then rest), q stop after this tick; Ctrl-C stops safely")
                for index in plan.episodes:
                    data = plan.dataset.load(index)
                    actions, states = plan.fit.actions(data), plan.fit.states(data)
                    self.on_event(f"episode {index}: easing the followers to its first action")
                    ticks = self._ease_in(rig, actions[0], keys)
                    run = self._episode(rig, data, actions, states, ticks, plan.rig.realtime_priority, keys)
                    runs.append(run)
                    if run.stopped_by != "done" and not run.stopped_by.startswith("policy"):
                        self.stopped_by = run.stopped_by
                        return

    def _note_limits(self, rig: BimanualRig) -> None:
        for side in Side:
            limits = rig.guards[side].limits
            for joint in JOINT_NAMES:
                self.limits[joint_key(side, joint)] = (float(limits.low[joint]), float(limits.high[joint]))

    # --- phases ------------------------------------------------------------------------------

    def _ease_in(self, rig: BimanualRig, target: np.ndarray, keys: KeyReader | None) -> int:
        """Move the followers to the episode's first action at the ramp speed (always in real time)."""
        fps = self.plan.fit.fps
        loop: ControlLoop | None = None
        source = EaseInSource(target, rig.safety, fps, lambda: loop.stop() if loop else None)
        hooks = [KeyHook(keys, rig, lambda: loop.stop() if loop else None)] if keys is not None and keys.enabled else []
        loop = ControlLoop(rig, source, fps=fps, hooks=hooks, realtime_priority=self.plan.rig.realtime_priority)
        try:
            loop.run(EASE_IN_TIMEOUT_S)
        except SafetyStopError as e:
            raise ReplayError(f"the safety layer stopped the followers while easing in: {e}") from e
        if hooks and hooks[0].quit:
            raise KeyboardInterrupt
        if not source.engaged:
            raise ReplayError(
                f"the followers did not reach the episode's first action within {EASE_IN_TIMEOUT_S:.0f} s."
                " Next: check nothing blocks them (so101-doctor), or raise rig.safety.ramp_speed_deg_s"
            )
        return source.ticks

    def _episode(
        self,
        rig: BimanualRig,
        data: EpisodeData,
        actions: np.ndarray,
        states: np.ndarray | None,
        ease_in_ticks: int,
        realtime_priority: int,
        keys: KeyReader | None = None,
    ) -> EpisodeRun:
        plan = self.plan
        loop: ControlLoop | None = None

        def done() -> None:
            if loop is not None:
                loop.stop()

        with self._frames(data) as frames:
            source: RecordedActionSource | PolicyReplaySource
            if self.policy is None:
                source = RecordedActionSource(actions, done)
            else:
                self.policy.begin_episode(actions)
                self.policy.engine.start()
                policy_states = states if states is not None else np.full_like(actions, np.nan)
                driven = ~np.isnan(actions[0])
                task = self.policy_task(data)
                source = PolicyReplaySource(self.policy.engine, policy_states, frames.get, task, done,
                                            driven=driven, dataset_fps=plan.fit.dataset_fps)  # fmt: skip
            log = TickLog(rig, frame=lambda: source.frame, facts=lambda: getattr(source, "facts", None))
            hooks: list = [log]
            key_hook = KeyHook(keys, rig, done) if keys is not None and keys.enabled else None
            if key_hook is not None:
                hooks.append(key_hook)
            loop = ControlLoop(rig, source, fps=plan.fit.fps, hooks=hooks, realtime_priority=realtime_priority)
            pace(loop, plan.pace)
            if isinstance(source, PolicyReplaySource) and self.prime:
                source.prime(rig.observe())
            self.on_event(f"episode {data.info.index}: replaying {data.info.length} frames at {plan.fit.fps:g} fps")
            stopped_by = "done"
            start = time.monotonic()
            try:
                loop.run()
            except InferenceError as e:
                stopped_by = f"policy error at frame {source.frame}: {e}"
            except SafetyStopError as e:
                stopped_by = str(e)
            except KeyboardInterrupt:
                stopped_by = "Ctrl-C"
            wall_s = time.monotonic() - start
        if key_hook is not None and key_hook.quit:
            stopped_by = "q"
        engine = self.policy.engine.stats() if self.policy is not None else None
        run = EpisodeRun(
            episode=data.info.index,
            task=data.info.task,
            recorded_actions=actions,
            recorded_states=states,
            trace=log.trace(),
            loop=loop.timer.stats(),
            stopped_by=stopped_by,
            ease_in_ticks=ease_in_ticks,
            wall_s=wall_s,
            engine=engine,
            arm_commands=None,
        )
        if stopped_by == "Ctrl-C":
            self.stopped_by = stopped_by
        return run

    def policy_task(self, data: EpisodeData) -> str:
        """The task text the policy gets: the override, else the episode's own."""
        return self.task or data.info.task or "Fold the cloth"

    @contextmanager
    def _frames(self, data: EpisodeData) -> Iterator[EpisodeFrames | None]:
        if self.policy is None:
            yield None
            return
        with EpisodeFrames(data.info.videos, data.info.length, self.plan.fit.dataset_fps) as frames:
            yield frames
