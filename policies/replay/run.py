"""Running a replay: each episode through the same control loop and safety layer as teleop and deploy.

    for each episode:
        dry      a fresh BimanualRig of dry arms, standing where the episode was recorded
        virtual  the virtual rig (one for the run); first an ease-in to the episode's first action
        live     the real arms in the rig file; ease-in, e-stop key (e), q to stop, Ctrl-C safe
        ──> ControlLoop(rig, source, fps, hooks=[TickLog, keys]) paced in real time or as fast as possible
              source: RecordedActionSource (the actions) or PolicyReplaySource (a policy, open loop)
        <── EpisodeRun: every tick (requested, sent, observed, timing, safety events)

Nothing here decides what is good or bad: `analysis.py` reads the runs. A safety stop (e-stop,
watchdog) ends the run; a policy error ends its episode; Ctrl-C, SIGTERM or SIGHUP ends the run
(the loop stops at its next tick). Each keeps what ran so far, so the report still covers it.
"""

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace

import numpy as np

from policies.engine import EngineStats
from policies.errors import InferenceError
from policies.replay.dataset import EpisodeData
from policies.replay.dry import dry_calibrations, start_pose
from policies.replay.errors import ReplayError
from policies.replay.frames import EpisodeFrames
from policies.replay.log import TickLog
from policies.replay.pacing import pacing
from policies.replay.plan import EpisodeRun, ReplayPlan, ReplayRun, Target
from policies.replay.policy import ReplayPolicy
from policies.replay.sources import EaseInSource, PolicyReplaySource, RecordedActionSource
from robot.control_loop import ControlLoop, Step
from robot.feetech.calibration_files import calibration_root
from robot.feetech.dry_arm import DRY_PORT, DryArm, dry_arm_factory
from robot.joint_values import JointValues
from robot.joints import GRIPPER, JOINT_NAMES, Role, Side, arm_name, joint_key
from robot.rig import BimanualRig, SafetyStopError
from robot.rig_ports import rig_ports
from robot.safety.config import ExitMode
from robot.signals import StopSignals
from teleop.keys import Key, KeyReader

logger = logging.getLogger(__name__)
_BODY_COLUMNS = [i for i, joint in enumerate(JOINT_NAMES) if joint != GRIPPER]
EASE_IN_TIMEOUT_S = 30.0  # the followers must reach an episode's first action within this, s


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


class EaseInSteps:
    """The ease-in's largest per-tick change of a body joint's goal, degrees (the report shows it)."""

    def __init__(self, rig: BimanualRig) -> None:
        self.ticks = 0
        self.max_step_deg = 0.0
        self._last = JointValues.from_sides({side: rig.guards[side].last_sent for side in Side})

    def on_step(self, step: Step) -> None:
        """Compare this tick's goals with the last tick's."""
        moved = np.abs(step.sent.array - self._last.array)[:, _BODY_COLUMNS]
        self.max_step_deg = max(self.max_step_deg, float(moved.max()))
        self._last = step.sent


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
        stops: StopSignals | None = None,
    ) -> None:
        """A replay of `plan`; with `policy`, an open-loop policy run.

        `task` overrides the recorded task text; `prime` has the engine compute its first chunk
        before each episode's loop. `stops`: the command's stop signals (a signal stops the loop at
        its next tick and ends the run; a second one e-stops the rig); None: none handled here.
        """
        self.stops = stops if stops is not None else StopSignals()  # never entered: inert
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
            self.stopped_by = self.stops.reason or "Ctrl-C"
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
                calibrations, start_pose(states, actions), calibration_root(plan.rig.calibration.dir)
            )
            # The dry arms stand where the episode was recorded, mid-motion: what a live replay's arms do
            # once its ease-in is over, so no connect ramp (nothing physical moves here).
            rig = BimanualRig(
                config, ports, with_leaders=False, with_cameras=False, arm_factory=factory, ramp_at_connect=False
            )
            with rig:
                self._note_limits(rig)
                run = self._episode(rig, data, actions, states, ease_in_ticks=0, realtime_priority=0)
                commands = {
                    arm.name: np.array([[c.goal[j] for j in JOINT_NAMES] for c in arm.log]).reshape(-1, 6)
                    for arm in rig.arms.values()
                    if isinstance(arm, DryArm)
                }
            runs.append(replace(run, arm_commands=commands))
            if run.stopped_by != "done" and not run.stopped_by.startswith("policy"):
                self.stopped_by = run.stopped_by
                return

    def _run_rig(self, runs: list[EpisodeRun]) -> None:
        plan = self.plan
        with rig_ports(plan.rig) as found:
            rig = BimanualRig(plan.rig, found.ports, with_leaders=False, with_cameras=False)
            live = plan.target is Target.LIVE
            with self.stops.rig(rig), KeyReader() if live else nullcontext() as keys:
                self._note_limits(rig)
                if live and keys is not None and keys.enabled:
                    self.on_event(
                        "keys: e e-stop (freeze, torque kept on; so101-release lets go), q stop after this tick;"
                        " Ctrl-C stops safely"
                    )
                for index in plan.episodes:
                    data = plan.dataset.load(index)
                    actions, states = plan.fit.actions(data), plan.fit.states(data)
                    self.on_event(f"episode {index}: easing the followers to its first action")
                    ease_in = self._ease_in(rig, actions[0], keys)
                    run = self._episode(rig, data, actions, states, ease_in.ticks, plan.rig.realtime_priority, keys)
                    run = replace(run, ease_in_max_step_deg=ease_in.max_step_deg)
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

    def _ease_in(self, rig: BimanualRig, target: np.ndarray, keys: KeyReader | None) -> "EaseInSteps":
        """Move the followers to the episode's first action at the ramp speed (always in real time).

        The rig's transition ramp does the moving; once it is over the episode plays under the normal caps.
        """
        fps = self.plan.fit.fps
        loop: ControlLoop | None = None
        rig.begin_transition("a replay starts")
        source = EaseInSource(target, lambda: rig.in_transition, fps, lambda: loop.stop() if loop else None)
        steps = EaseInSteps(rig)
        hooks: list = [steps]
        if keys is not None and keys.enabled:
            hooks.insert(0, KeyHook(keys, rig, lambda: loop.stop() if loop else None))
        loop = ControlLoop(rig, source, hooks=hooks, realtime_priority=rig.config.realtime_priority)
        try:
            with self.stops.stopping(loop.stop):
                loop.run(EASE_IN_TIMEOUT_S)
        except SafetyStopError as e:
            if self.stops.signum is None:  # (else a second signal's e-stop)
                raise ReplayError(f"the safety layer stopped the followers while easing in: {e}") from e
        if (isinstance(hooks[0], KeyHook) and hooks[0].quit) or self.stops.signum is not None:
            raise KeyboardInterrupt
        if not source.engaged:
            raise ReplayError(
                f"the followers did not reach the episode's first action within {EASE_IN_TIMEOUT_S:.0f} s."
                " Next: check nothing blocks them (so101-doctor), or raise rig.safety.ramp_speed_deg_s"
            )
        steps.ticks = source.ticks
        return steps

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

        before = self.policy.engine.stats() if self.policy is not None else None
        with self._frames(data) as frames:
            source = self._source(data, actions, states, frames, done)
            log = TickLog(rig, frame=lambda: source.frame, facts=lambda: getattr(source, "facts", None))
            key_hook = KeyHook(keys, rig, done) if keys is not None and keys.enabled else None
            hooks = [log] if key_hook is None else [log, key_hook]
            loop = ControlLoop(rig, source, hooks=hooks, realtime_priority=realtime_priority, **pacing(plan.pace))
            self.on_event(f"episode {data.info.index}: replaying {data.info.length} frames at {plan.fit.fps:g} fps")
            stopped_by = "done"
            start = time.monotonic()
            try:
                with self.stops.stopping(done):
                    if isinstance(source, PolicyReplaySource) and self.prime:
                        source.prime(rig.observe())
                    loop.run()
            except InferenceError as e:
                stopped_by = f"policy error at frame {max(source.frame, 0)}: {e}"
            except SafetyStopError as e:
                stopped_by = str(e)
            except KeyboardInterrupt:
                stopped_by = self.stopped_by = self.stops.reason or "Ctrl-C"
            if self.stops.reason is not None and (stopped_by == "done" or self.stops.escalated):
                stopped_by = self.stopped_by = self.stops.reason  # the loop stopped at a signal
            wall_s = time.monotonic() - start
        if key_hook is not None and key_hook.quit:
            stopped_by = "q"
        return EpisodeRun(
            episode=data.info.index,
            task=data.info.task,
            recorded_actions=actions,
            recorded_states=states,
            trace=log.trace(),
            loop=loop.timer.stats(),
            stopped_by=stopped_by,
            ease_in_ticks=ease_in_ticks,
            wall_s=wall_s,
            engine=_engine_delta(before, self.policy.engine.stats()) if self.policy and before else None,
            arm_commands=None,
        )

    def _source(
        self,
        data: EpisodeData,
        actions: np.ndarray,
        states: np.ndarray | None,
        frames: EpisodeFrames | None,
        done: Callable[[], None],
    ) -> RecordedActionSource | PolicyReplaySource:
        if self.policy is None or frames is None:
            return RecordedActionSource(actions, done)
        self.policy.begin_episode(actions)
        self.policy.engine.start()
        return PolicyReplaySource(
            self.policy.engine,
            states if states is not None else np.full_like(actions, np.nan),
            frames.get,
            self.policy_task(data),
            done,
            dataset_fps=self.plan.fit.dataset_fps,
            driven=~np.isnan(actions[0]),
        )

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


def _engine_delta(before: EngineStats, after: EngineStats) -> EngineStats:
    """An engine's counters over one episode (its own are over its whole life)."""
    return replace(
        after,
        chunks=after.chunks - before.chunks,
        starved_ticks=after.starved_ticks - before.starved_ticks,
        blocked_s=after.blocked_s - before.blocked_s,
    )
