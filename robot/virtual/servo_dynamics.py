"""The fitted STS3215 model (`virtual.dynamics: fitted`): the servo's own position loop, not an ideal one.

Per joint, in encoder steps, on the same 2 ms substeps as the ideal model (`physics.py`):

    Goal_Position --[latency_s]--> goal --> PD loop --duty--> DC motor --> gear side x --backlash--> output y
                                             ^  (P, D, Acceleration,        ^ gravity (URDF), object, stops
                                             |   Torque_Limit registers)    |
                                             +------------------------------+ (present position = y)

- the loop: duty = P·p·(goal − x) − D·d·speed, capped by Torque_Limit (and Max_Torque_Limit);
- the motor turns at no_load_speed·(duty + external torque / stall torque), solved each substep
  (no inertia state: a geared STS3215's electrical and mechanical time constants are far below
  2 ms), then held to Goal_Velocity and to the Acceleration register's ramp;
- gravity: a planar model of shoulder_lift, elbow_flex and wrist_flex from the URDF's link masses,
  worked out from the three joints' present positions once per integration interval;
- backlash: the output lags the gear side by up to half the play, and rests on the side gravity
  pulls it to; an unloaded joint shows the play as a dead band when it reverses (a lumped model:
  the loop acts on the gear side);
- a gripper closing on an object squeezes it like a spring and stalls where its torque balances
  the object's push, short of its goal;
- Present_Load reads the duty (0.1 %), which is what the firmware reports.

Torque off, a joint follows the operator's hand exactly as in the ideal model.
"""

import math
from collections import deque
from collections.abc import Sequence

from robot.virtual.physics import (
    MAX_INTEGRATED_S,
    SETTLED_STEPS,
    SNAP_SPEED_STEPS_S,
    SUBSTEP_S,
    Drive,
    JointModel,
    JointPhysics,
)
from robot.virtual.servo_params import GRAVITY_M_S2, STEPS_PER_REV, ServoParams

_RAD_PER_STEP = 2 * math.pi / STEPS_PER_REV
_GOAL_CHANGED_STEPS = 1e-6  # a goal that moved less than this is the same goal
_MAX_INTEGRATED_S = 4.0  # a full-range move at the gripper's half torque, and its tail, take under 3 s
_GRAVITY_LOADED = 0.02  # above this fraction of stall torque, gravity holds the output against the play


class ArmGravity:
    """Gravity torque on shoulder_lift, elbow_flex and wrist_flex of one arm, from their positions.

    `middles` are the actual positions (steps) where each joint is at the middle of its calibrated
    range: LeRobot's 0 degrees, the URDF's zero pose.
    """

    def __init__(self, params: ServoParams, middles: Sequence[float]) -> None:
        self._params = params
        self._middles = tuple(middles)
        self._joints: list[JointPhysics] = []

    def attach(self, joints: Sequence[JointPhysics]) -> None:
        """The three joints' mechanics (shoulder_lift, elbow_flex, wrist_flex), read for their angles."""
        self._joints = list(joints)

    def torques_nm(self, angles_rad: Sequence[float]) -> tuple[float, float, float]:
        """Gravity torque on each of the three joints, N·m, positive toward increasing angle."""
        p = self._params
        (ax0, az0), (ex0, ez0), (wx0, wz0) = p.gravity_axis_xz_m
        (ux0, uz0), (lx0, lz0), (gx0, gz0) = p.gravity_com_xz_m
        m_upper, m_lower, m_wrist = p.gravity_mass_kg
        q1 = angles_rad[0]
        q2 = q1 + angles_rad[1]
        q3 = q2 + angles_rad[2]
        c1, s1, c2, s2, c3, s3 = math.cos(q1), math.sin(q1), math.cos(q2), math.sin(q2), math.cos(q3), math.sin(q3)
        # A rotation about +y takes (x, z) to (x cos q + z sin q, -x sin q + z cos q); only x matters.
        elbow_x = ax0 + (ex0 - ax0) * c1 + (ez0 - az0) * s1
        upper_x = ax0 + (ux0 - ax0) * c1 + (uz0 - az0) * s1
        wrist_x = elbow_x + (wx0 - ex0) * c2 + (wz0 - ez0) * s2
        lower_x = elbow_x + (lx0 - ex0) * c2 + (lz0 - ez0) * s2
        grip_x = wrist_x + (gx0 - wx0) * c3 + (gz0 - wz0) * s3
        wrist = m_wrist * (grip_x - wrist_x)
        elbow = wrist + m_wrist * (wrist_x - elbow_x) + m_lower * (lower_x - elbow_x)
        lift = m_upper * (upper_x - ax0) + m_lower * (lower_x - ax0) + m_wrist * (grip_x - ax0)
        return (GRAVITY_M_S2 * lift, GRAVITY_M_S2 * elbow, GRAVITY_M_S2 * wrist)

    def load_fraction(self, index: int) -> float:
        """Gravity on joint `index` (0 lift, 1 elbow, 2 wrist) as a fraction of stall torque, toward + steps."""
        angles = [(j.position - m) * _RAD_PER_STEP for j, m in zip(self._joints, self._middles, strict=True)]
        return self.torques_nm(angles)[index] / self._params.stall_torque_nm


class ServoJointPhysics(JointPhysics):
    """One joint under the fitted servo model; a drop-in for `JointPhysics`."""

    def __init__(
        self,
        model: JointModel,
        params: ServoParams,
        joint: str,
        gravity: tuple[ArmGravity, int] | None = None,
    ) -> None:
        """One joint of an arm: `joint` names it (its gains in `params`).

        `gravity`: the arm's gravity model and this joint's index in it, for a gravity-loaded joint.
        """
        super().__init__(model)
        self.params = params
        self._p_duty = params.p_duty(joint)
        self._d_duty = params.d_duty(joint)
        self._gravity = gravity
        self.gear_position = self.position  # x: the gear side, where the loop acts, steps
        self._now_s = 0.0  # time integrated so far, s (only differences matter)
        self._goal: float | None = None  # the goal the loop acts on now (after the latency)
        self._written: float | None = None  # the last goal written
        self._pending: deque[tuple[float, float]] = deque()  # (time it acts, goal)
        self._resting: tuple[float, float] | None = None  # (goal, external load) it came to rest under

    def lower_limit(self) -> float:
        """The lowest position: the stop, or the object in the jaws squeezed as far as it goes."""
        if self.object_contact is None:
            return self.model.stop_min
        return max(self.model.stop_min, self.object_contact - self.params.object_max_squeeze_steps)

    def advance(self, dt_s: float, drive: Drive) -> None:
        """Integrate `dt_s` seconds under `drive`; a new goal acts `latency_s` after it was written."""
        if dt_s <= 0:
            return
        if not drive.torque_on or drive.goal_actual is None:
            self._goal = self._written = self._resting = None
            self._pending.clear()
            # The hand, exactly as in the ideal model: its own integration, not the loop's (the names
            # differ on purpose: the base class's advance calls its _substeps and _settle, and an
            # override here once ran the loop with torque off, so gravity let a released arm fall).
            super().advance(dt_s, drive)
            self.gear_position = self.position
            self._now_s += dt_s
            return
        goal = drive.goal_actual
        if self._goal is None:  # torque just came on: the goal is where the joint is
            self._goal = self._written = goal
        elif self._written is None or abs(goal - self._written) > _GOAL_CHANGED_STEPS:
            self._written = goal
            self._pending.append((self._now_s + self.params.latency_s, goal))
        end = self._now_s + dt_s
        while self._pending and self._pending[0][0] < end:
            acts_at, new_goal = self._pending.popleft()
            self._interval(acts_at - self._now_s, drive)
            self._now_s = max(self._now_s, acts_at)
            self._goal = new_goal
        self._interval(end - self._now_s, drive)
        self._now_s = end

    def update_load(self, drive: Drive) -> None:
        """A torque change acts at once; a goal change only after the latency."""
        if not drive.torque_on:
            self.load_permille = 0.0

    def _interval(self, dt_s: float, drive: Drive) -> None:
        if dt_s <= 0:
            return
        if self._resting is not None:
            # At rest: nothing moves while the goal and the load stay (an idle rig costs almost nothing).
            goal, external = self._resting
            if goal == self._goal and abs(external - self._gravity_fraction()) < 1e-4:
                self._rest(dt_s)
                return
            self._resting = None
        # A long gap is integrated a second at a time until the joint comes to rest (the ideal model
        # jumps to its goal; this loop's tail has no closed form once saturation and play are in it),
        # for at most _MAX_INTEGRATED_S: then it is wherever that left it.
        remaining, integrated_s = dt_s, 0.0
        while remaining > 0 and integrated_s < _MAX_INTEGRATED_S and (integrated_s == 0 or self._resting is None):
            chunk = min(remaining, MAX_INTEGRATED_S)
            steps = max(1, math.ceil(chunk / SUBSTEP_S))
            self._loop_substeps(steps, chunk / steps, drive)
            remaining -= chunk
            integrated_s += chunk
        if remaining > 0:
            self._rest(remaining)

    def _gravity_fraction(self) -> float:
        if self._gravity is None:
            return 0.0
        arm, index = self._gravity
        return arm.load_fraction(index)

    def _loop_substeps(self, steps: int, h: float, drive: Drive) -> None:
        """`steps` substeps of `h` seconds; gravity and the register settings are held for the interval."""
        p, model = self.params, self.model
        goal = self._goal if self._goal is not None else self.gear_position
        w_nl = p.no_load_speed_steps_s
        kp = self._p_duty * drive.p_gain_scale * 32.0
        kd = self._d_duty * drive.d_gain_scale * 32.0
        limit = max(0.0, min(1000.0, drive.torque_limit_permille)) / 1000.0
        vmax = drive.max_speed_steps_s if drive.max_speed_steps_s > 0 else math.inf
        accels = [a for a in (drive.max_accel_steps_s2, drive.max_accel_limit_steps_s2) if a > 0]
        dv_max = min(accels) * h if accels else math.inf
        gravity = self._gravity_fraction()
        loaded = abs(gravity) > _GRAVITY_LOADED
        half_play = p.backlash_steps / 2.0
        low, high = self.lower_limit(), model.stop_max
        contact = self.object_contact
        stiffness = p.object_stiffness_per_step
        denominator = 1.0 + w_nl * kd
        full_load_heating = model.heating_c_per_s_at_full_load
        ambient, thermal_tau = model.ambient_c, model.thermal_tau_s
        x, y, w, temperature = self.gear_position, self.position, self.velocity, self.temperature_c
        duty = 0.0
        for _ in range(steps):
            external = gravity
            if contact is not None and y < contact:
                external += stiffness * (contact - y)  # the object pushes the jaw open
            error = goal - x
            speed = w_nl * (kp * error + external) / denominator
            duty = kp * error - kd * speed
            if duty > limit:
                duty, speed = limit, w_nl * (limit + external)
            elif duty < -limit:
                duty, speed = -limit, w_nl * (external - limit)
            speed = max(-vmax, min(vmax, speed))
            w = max(w - dv_max, min(w + dv_max, speed))
            x += w * h
            if loaded:
                y = x + math.copysign(half_play, gravity)
            elif y < x - half_play:
                y = x - half_play
            elif y > x + half_play:
                y = x + half_play
            if y < low or y > high:
                y = min(high, max(low, y))
                x = max(y - half_play, min(y + half_play, x))
                w = 0.0
            temperature += h * ((ambient - temperature) / thermal_tau + full_load_heating * duty * duty)
        if abs(w) < SNAP_SPEED_STEPS_S and kp > 0 and abs(external) <= limit:
            rest = goal + external / kp  # where the loop's push balances the load
            if abs(rest - x) < SETTLED_STEPS and (contact is None or y >= contact):
                x, w, duty = rest, 0.0, -external
                if loaded:
                    y = x + math.copysign(half_play, gravity)
                self._resting = (goal, gravity)
        self.gear_position, self.position, self.velocity, self.temperature_c = x, y, w, temperature
        self.load_permille = duty * 1000.0

    def _rest(self, dt_s: float) -> None:
        """A long idle gap past what is integrated: the joint stays where that left it; heat relaxes."""
        self.velocity = 0.0
        model = self.model
        heating = model.heating_c_per_s_at_full_load * (self.load_permille / 1000.0) ** 2
        steady = model.ambient_c + heating * model.thermal_tau_s
        self.temperature_c = steady + (self.temperature_c - steady) * math.exp(-dt_s / model.thermal_tau_s)
