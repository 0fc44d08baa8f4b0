"""The bimanual rig: two followers, optional leaders and cameras, with the safety layer in front.

    with BimanualRig(config, ports, cameras=cameras) as rig:
        obs = rig.observe()                  # 12 follower joints (+ leaders), synced frames
        sent = rig.act(obs.leader_action())  # guarded, written to both followers at once

    act(action) -> e-stop pressed?   -> freeze, raise SafetyStopError (the followers stay held)
                -> watchdog verdict? -> HOLD: resend the hold pose (when it ends: a transition)
                                     -> REST: raise SafetyStopError (exit then rests and releases)
                -> ActionGuard per arm (NaN, limits, transition ramp, step, velocity) -> both buses
                -> the followers' status poll, when due (its verdict acts from the next tick)

Every change of the source of the goals is a transition (`begin_transition`; the rig begins one
itself at connect and when a hold ends): the guards ramp to the new goals at `ramp_speed_deg_s`.

Connect is all-or-nothing: a failure disconnects (torque released) whatever was connected. Exit
always leaves the followers safe: holding, or moved slowly to the pose they started in and then
released (`safety.on_exit`; a watchdog stop always rests and releases). An e-stop freezes: the
followers keep torque at the present position, through the exit too; releasing them is a separate,
explicit act (`so101-release`). A bus that fails while going to rest stops only its own arm.
The rig composes the safety layer's pieces (robot/safety/): guards armed at connect, the watchdogs'
watch, the hold, gripper relief, the freeze and the move to rest; it owns the buses and the order.
"""

import logging
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace

from robot.arm import JointReading
from robot.arm_pool import ArmPool, read_all
from robot.cameras.config import CameraConfig
from robot.cameras.factory import make_cameras
from robot.cameras.sync import SyncReader
from robot.cameras.sync_stats import SyncedFrames
from robot.config import RigConfig
from robot.errors import RobotError
from robot.feetech.so101_arm import SO101Arm
from robot.joint_values import JointValues
from robot.joints import GRIPPER, Role, Side, arm_name
from robot.realtime import lower_priority
from robot.safety.connect import arm_follower
from robot.safety.counters import SafetyCounters
from robot.safety.follower_watch import FollowerWatch, PollMisses
from robot.safety.freeze import command_present
from robot.safety.gripper_relief import GripperReliefs
from robot.safety.guard import ActionGuard
from robot.safety.hold import Hold
from robot.safety.leader_drive import LeaderDrive
from robot.safety.limits import limits_from_calibration
from robot.safety.rest import rest_followers, rests_at_exit
from robot.safety.watchdog import Verdict, WatchdogDecision
from robot.stop_flag import StopFlag

logger = logging.getLogger(__name__)


class SafetyStopError(RobotError):
    """The session must end: an e-stop, or the watchdog sent the followers to rest."""


@dataclass(frozen=True)
class Observation:
    """One tick's view of the rig."""

    t_s: float  # monotonic time the observation is for
    followers: dict[Side, JointReading]
    leaders: dict[Side, JointReading]
    bus_time_s: float  # how long reading every arm took (they are read concurrently)
    frames: SyncedFrames | None = None  # one frame per camera matched to this tick, when there are cameras

    def state(self) -> JointValues:
        """The 12 follower joint positions."""
        return _values(self.followers)

    def leader_action(self) -> JointValues:
        """The 12 leader joint positions as an action."""
        if not self.leaders:
            raise RobotError("this rig has no leader arms")
        return _values(self.leaders)


def _values(readings: Mapping[Side, JointReading]) -> JointValues:
    return JointValues.from_sides({side: reading.positions for side, reading in readings.items()})


def capture_below(camera: CameraConfig, loop_priority: int) -> CameraConfig:
    """The camera's config with its capture thread real-time one below the loop, with the buses (when it is)."""
    if loop_priority <= 0 or camera.capture.realtime_priority:
        return camera
    return replace(camera, capture=replace(camera.capture, realtime_priority=lower_priority(loop_priority)))


class BimanualRig:
    """Two SO-101 followers (and leaders) as one device. Methods are called from one thread."""

    def __init__(
        self,
        config: RigConfig,
        ports: Mapping[str, str],
        *,
        with_leaders: bool = True,
        with_cameras: bool = True,
        arm_factory: Callable[[Side, Role, str], SO101Arm] | None = None,
        ramp_at_connect: bool = True,
    ) -> None:
        """`ramp_at_connect=False` only for dry arms placed mid-recording (nothing physical moves)."""
        self.config = config
        self._ramp_at_connect = ramp_at_connect
        self.safety = config.safety
        names = [arm_name(side, Role.FOLLOWER) for side in Side]
        if with_leaders:
            names += [arm_name(side, Role.LEADER) for side in Side if arm_name(side, Role.LEADER) in ports]
        # Another kind of arm (dry arms for a replay) only through a factory; SO-101 arms by default.
        make_arm = arm_factory or self._so101_arm
        self.arms: dict[str, SO101Arm] = {
            name: make_arm(Side(name.split("_")[0]), Role(name.split("_")[1]), ports[name]) for name in names
        }
        # Virtual cameras render what the followers last reported (never bus I/O of their own); the
        # first reading is taken at connect, before any camera starts.
        self._joint_snapshot: JointValues | None = None
        configs = [capture_below(c, config.realtime_priority) for c in config.cameras] if with_cameras else []
        self.cameras = make_cameras(configs, joint_source=self._joints_for_cameras)
        self.sync = SyncReader(list(self.cameras.values()), config.sync) if self.cameras else None
        self.pool = ArmPool(len(self.arms), realtime_priority=lower_priority(config.realtime_priority))
        self.guards: dict[Side, ActionGuard] = {}
        self.watch = FollowerWatch({side: arm_name(side, Role.FOLLOWER) for side in Side}, self.safety)
        self.poll_misses = PollMisses()  # a late reply to a status poll is ridden out, a silent motor is not
        self.rest_pose: JointValues | None = None  # where the exit's move to rest goes; set at connect
        self.counters = SafetyCounters()
        self._estop = StopFlag()  # set from key hooks and signal handlers: no lock (robot/stop_flag.py)
        self.frozen = False  # an e-stop froze the followers: they keep torque where they are, exit included
        self._stop_reason: str | None = None
        self.hold = Hold()
        self._stack: ExitStack | None = None
        self.reliefs = GripperReliefs()
        self._leader_drive: LeaderDrive | None = None

    def _so101_arm(self, side: Side, role: Role, port: str) -> SO101Arm:
        config = self.config
        return SO101Arm(side, role, port, rig_id=config.id, calibration=config.calibration, bus=config.bus)

    # --- lifecycle -------------------------------------------------------------------------

    def follower(self, side: Side) -> SO101Arm:
        """The follower arm of one side."""
        return self.arms[arm_name(side, Role.FOLLOWER)]

    def _followers(self) -> dict[Side, SO101Arm]:
        return {side: self.follower(side) for side in Side}

    @property
    def has_leaders(self) -> bool:
        """Whether leader arms are connected."""
        return any(arm.role is Role.LEADER for arm in self.arms.values())

    def connect(self) -> None:
        """Connect every arm and camera; on any failure, undo what was done and re-raise."""
        with ExitStack() as stack:
            for arm in self.arms.values():
                arm.connect()
                stack.callback(arm.disconnect, release_torque=True)
            self._arm_safety()
            for camera in self.cameras.values():
                camera.connect()
                stack.callback(camera.disconnect)
            self._stack = stack.pop_all()

    def _arm_safety(self) -> None:
        start = read_all(self.arms)
        self._joint_snapshot = _values({side: start[arm_name(side, Role.FOLLOWER)] for side in Side})
        rest = {}
        for side in Side:
            arm = self.follower(side)
            ranges = {j: (c.range_min, c.range_max) for j, c in arm.device.bus.calibration.items()}
            positions = start[arm.name].positions
            armed = arm_follower(arm.name, ranges, self.safety, positions, ramp=self._ramp_at_connect)
            self.guards[side], rest[side] = armed.guard, armed.rest_pose
        self.rest_pose = JointValues.from_sides(rest)

    def disconnect(self) -> None:
        """Leave the followers safe (per `safety.on_exit`), then close everything."""
        if self._stack is None:
            return
        try:
            rest = rests_at_exit(self.safety.on_exit, frozen=self.frozen, stopped=self._stop_reason is not None)
            rested = self.go_to_rest() if rest else {}
            if self.frozen:
                logger.warning(
                    "e-stop: the followers keep torque where they froze; release them with so101-release"
                    " (hold each arm: it falls when released)"
                )
            for arm in self.arms.values():
                # A follower whose bus failed on the way to rest keeps torque where it is (released, it
                # would fall); the other side rests and releases as asked.
                release = arm.role is Role.LEADER or (rest and rested.get(arm.name, False))
                try:
                    arm.disconnect(release_torque=release)
                except RobotError as e:
                    logger.error("%s did not disconnect cleanly: %s", arm.name, e)
        finally:
            stack, self._stack = self._stack, None
            stack.pop_all()  # the arms are closed above; cameras below
            for camera in self.cameras.values():
                try:
                    camera.disconnect()
                except Exception as e:  # a camera must not stop the arms' shutdown
                    logger.warning("camera %s did not close cleanly: %s", camera.name, e)
            self.pool.close()

    def leader_drive(self) -> LeaderDrive:
        """The leaders as driven arms (a handover to the person), guarded like followers by their own ranges."""
        if self._leader_drive is None:
            leaders = {side: self.arms[arm_name(side, Role.LEADER)] for side in Side}
            margins = {
                "margin_deg": self.safety.limit_margin_deg,
                "gripper_margin_percent": self.safety.gripper_margin_percent,
            }
            limits = {
                side: limits_from_calibration(
                    {j: (c.range_min, c.range_max) for j, c in arm.device.bus.calibration.items()}, **margins
                )
                for side, arm in leaders.items()
            }
            self._leader_drive = LeaderDrive(leaders, limits, self.safety)
        return self._leader_drive

    def __enter__(self) -> "BimanualRig":
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disconnect()

    # --- observing -------------------------------------------------------------------------

    def observe(self) -> Observation:
        """Read every arm at once (their requests on the lines together), and take the cameras' frames."""
        start = time.monotonic()
        readings = read_all(self.arms)
        bus_time = time.monotonic() - start
        followers = {side: readings[arm_name(side, Role.FOLLOWER)] for side in Side}
        self.reliefs.observed(followers)
        leaders = {
            side: readings[arm_name(side, Role.LEADER)] for side in Side if arm_name(side, Role.LEADER) in readings
        }
        self._joint_snapshot = _values(followers)
        # The frames nearest the tick among those already captured: no waiting on the control path.
        frames = self.sync.select(start) if self.sync is not None else None
        return Observation(t_s=start, followers=followers, leaders=leaders, bus_time_s=bus_time, frames=frames)

    def _joints_for_cameras(self) -> JointValues:
        """The followers' last positions, for virtual cameras (called from their capture threads)."""
        if self._joint_snapshot is None:
            raise RobotError("the virtual cameras asked for the followers' pose before the rig connected")
        return self._joint_snapshot

    @property
    def last_decision(self) -> WatchdogDecision:
        """The watchdogs' decision for the followers, from their last health polls."""
        return self.watch.decision

    # --- acting ----------------------------------------------------------------------------

    def estop(self) -> None:
        """Software e-stop (thread- and signal-safe): the next `act` freezes the followers, a move to rest stops.

        Frozen followers keep torque at the present position until the session ends, and after it.
        """
        self._estop.set()

    @property
    def stop_reason(self) -> str | None:
        """Why the safety layer stopped the session (an e-stop, a watchdog stop), or None."""
        return self._stop_reason

    @property
    def estopped(self) -> bool:
        """Whether an e-stop was asked for."""
        return self._estop.is_set()

    def begin_transition(self, reason: str) -> None:
        """The source of the goals changes: both followers ramp from their last goals to the new ones."""
        for guard in self.guards.values():
            guard.begin_transition(reason)

    @property
    def in_transition(self) -> bool:
        """Whether a follower is still being ramped to its source's goals."""
        return any(guard.in_transition for guard in self.guards.values())

    def act(self, action: JointValues, *, now_s: float | None = None, period_s: float | None = None) -> JointValues:
        """Send both arms' goals through the safety layer; returns what was sent.

        `now_s` and `period_s`: the tick's start and nominal interval on the control loop's clock
        (the guards' speed limits are per second of it); outside a loop, now and one period of the rig's `fps`.

        Raises:
            SafetyStopError: after an e-stop or a watchdog REST verdict (the followers were frozen).
        """
        if self._estop.is_set() and not self.frozen:
            self.freeze("e-stop")
        if self.frozen:
            raise SafetyStopError(f"followers frozen: {self._stop_reason} (they keep torque where they are)")
        if self._stop_reason is not None:
            raise SafetyStopError(f"the rig is stopped ({self._stop_reason})")
        decision = self.last_decision
        if decision.verdict is Verdict.REST:
            self._freeze(decision.reason)
        if decision.verdict is Verdict.HOLD:
            held = self._hold()
            self._poll_health()
            return held
        if self.hold.end():
            self.begin_transition("hold ended")  # the source's goals moved on while the arms held
        goals = action.sides()
        # A gripper squeezing too hard is not closed further (robot/safety/gripper_relief.py).
        reliefs = self.reliefs.apply(goals, self.guards)
        self.counters.events.extend(reliefs)
        self.counters.gripper_reliefs += len(reliefs)
        now = time.monotonic() if now_s is None else now_s
        period = 1.0 / self.config.fps if period_s is None else period_s
        results = {side: self.guards[side].filter(goals[side], now, period) for side in Side}
        for result in results.values():
            self.counters.events.extend(result.events)
        sent = self.pool.send(
            {
                arm_name(side, Role.FOLLOWER): (lambda s=side: self.follower(s).write_joints(results[s].sent))
                for side in Side
            }
        )
        self.reliefs.sent({side: sent[arm_name(side, Role.FOLLOWER)][GRIPPER] for side in Side})
        self._poll_health()
        return JointValues.from_sides({side: sent[arm_name(side, Role.FOLLOWER)] for side in Side})

    def _poll_health(self) -> None:
        """The followers' status, when due, once this tick's goals are on their way.

        Polled after the goals, not before: a status read takes a bus transaction (~1.5 ms here),
        and done first it made every 15th command late, which is what the followers' worst
        tracking error came from (2.3 degrees instead of 1.5 on the virtual rig). The watchdog's
        verdict then acts from the next tick, 33 ms later, on temperatures that change over seconds.
        """
        now = time.monotonic()
        due = {
            name: (lambda n=name, a=arm: self.poll_misses.poll(n, lambda: a.poll_health(now)))
            for name, arm in self.arms.items()
            if arm.role is Role.FOLLOWER and arm.health_due(now)
        }
        if due:
            self.watch.update(self.pool.run(due), self.reliefs)

    def _hold(self) -> JointValues:
        """Keep the followers where they were when the hold began."""
        pose = self.hold.pose_for(self.guards)
        self.counters.held_ticks += 1
        self.pool.send(
            {
                arm_name(side, Role.FOLLOWER): (lambda s=side: self.follower(s).write_joints(pose.side(s)))
                for side in Side
            }
        )
        return pose

    def freeze(self, reason: str) -> None:
        """E-stop now, from the control thread: command the present positions and keep torque on.

        Nothing moves afterwards: `act` refuses, the exit neither rests nor releases the followers.
        Each arm is frozen on its own (one failed bus does not keep the other arm moving).
        """
        self._estop.set()
        self.frozen = True
        self._stop_reason = self._stop_reason or reason
        command_present(self._followers(), self.guards, reason)
        if self._leader_drive is not None:
            self._leader_drive.freeze()  # leaders being driven to a handover stop where they are too

    def _freeze(self, reason: str) -> None:
        """The watchdog's stop: command the present positions, end the session (the exit rests and releases)."""
        self._stop_reason = reason
        command_present(self._followers(), self.guards, reason)
        raise SafetyStopError(f"followers frozen: {reason}")

    def go_to_rest(self) -> dict[str, bool]:
        """Move both followers to their rest pose at the ramp speed (blocking), torque kept on.

        Each arm on its own (robot/safety/rest.py); an e-stop stops both where they are, frozen.
        Returns, per follower, whether its move ran without a bus failure (then it may be released).
        """
        if self.rest_pose is None:
            raise RobotError("the rig is not connected: there is no rest pose to go to")
        ramp = self.safety.ramp_speed_deg_s
        fps = self.config.fps
        move = rest_followers(self._followers(), self.guards, self.rest_pose, ramp, self._estop.is_set, fps=fps)
        if move.stopped:
            self.freeze("e-stop while going to rest")
            return {}
        return move.completed
