"""Joint mechanics of one emulated STS3215: position tracking, stops, stall, load and heat.

Positions are raw encoder steps of the motor's own shaft ("actual", before the homing offset),
kept unbounded so a joint's range may straddle the encoder's 4095 -> 0 seam.

Model, per substep of at most `SUBSTEP_S`:
- torque on: desired speed = clamp(error / tracking_tau_s, +-max speed), reached under an
  acceleration cap (a trapezoidal profile with a first-order tail);
- torque off: the joint follows the operator's hand (a leader arm, or a follower during
  calibration) with the same limits, or stays where it is;
- mechanical stops and an optional object between the gripper jaws block the motion; a blocked
  drive keeps pushing, so its load rises to the torque limit;
- load is proportional to the remaining position error plus a constant holding load, capped by
  the torque limit; temperature is a first-order model driven by load squared.
"""

import math
from dataclasses import dataclass

SUBSTEP_S = 0.002
SETTLED_STEPS = 0.05  # closer than this to where it can go, at zero speed, a joint is at rest
SNAP_SPEED_STEPS_S = 2.0  # below this speed and that distance, the joint snaps to rest
# Beyond this gap since the last packet, the rest is settled in one analytic step (an idle sim
# must not integrate minutes of nothing in 2 ms steps).
MAX_INTEGRATED_S = 1.0


@dataclass(frozen=True)
class JointModel:
    """The mechanics of one joint, in raw encoder steps of its motor (no homing applied)."""

    stop_min: float  # lower mechanical stop, steps
    stop_max: float  # upper mechanical stop, steps
    rest: float  # where the joint sits at power-on, steps
    max_speed_steps_s: float = 3000.0  # no-load speed of an STS3215 at 12 V, about 265 deg/s
    tracking_tau_s: float = 0.03  # first-order lag of the position loop
    hand_tau_s: float = 0.04  # how closely a hand-moved joint follows the hand
    holding_load_permille: float = 0.0  # load needed to hold the joint against gravity, 0.1 %
    load_per_step_error: float = 8.0  # load (0.1 %) per step of position error at P_Coefficient 32
    ambient_c: float = 25.0  # room temperature, deg C
    thermal_tau_s: float = 120.0  # motor case thermal time constant, s
    heating_c_per_s_at_full_load: float = 0.6  # heating rate at 100 % load, deg C/s


@dataclass
class Drive:
    """What drives the joint during one integration interval."""

    torque_on: bool
    goal_actual: float | None  # goal in actual steps (torque on)
    torque_limit_permille: float  # 0..1000
    max_speed_steps_s: float  # 0 = the model's maximum
    max_accel_steps_s2: float  # 0 = unlimited
    p_gain_scale: float  # P_Coefficient / 32
    hand_actual: float | None  # the operator's hand target (torque off)
    # Read by the fitted servo model only (`servo_dynamics.py`); the ideal model ignores them.
    d_gain_scale: float = 1.0  # D_Coefficient / 32
    max_accel_limit_steps_s2: float = 0.0  # Maximum_Acceleration, steps/s² (0 = no limit)


class JointPhysics:
    """Integrates one joint's motion, load and temperature."""

    def __init__(self, model: JointModel) -> None:
        self.model = model
        self.position = model.rest
        self.velocity = 0.0
        self.load_permille = 0.0
        self.temperature_c = model.ambient_c
        # An object between gripper jaws: the joint cannot go below this actual position.
        self.object_contact: float | None = None

    def lower_limit(self) -> float:
        """The lowest reachable position: the stop, or the object in the jaws."""
        if self.object_contact is None:
            return self.model.stop_min
        return max(self.model.stop_min, self.object_contact)

    def advance(self, dt_s: float, drive: Drive) -> None:
        """Integrate `dt_s` seconds under `drive`."""
        if dt_s <= 0:
            return
        if self._settled(drive):
            # Nothing moves: the exact solution is cheap, so an idle rig costs almost nothing.
            self._settle(dt_s, drive)
            return
        integrated = min(dt_s, MAX_INTEGRATED_S)
        steps = max(1, math.ceil(integrated / SUBSTEP_S))
        h = integrated / steps
        self._substeps(steps, h, drive)
        remainder = dt_s - integrated
        if remainder > 0:
            self._settle(remainder, drive)

    def update_load(self, drive: Drive) -> None:
        """Recompute the load for the present drive (a goal or torque change acts at once)."""
        self.load_permille = self._load(drive, self._target(drive))

    def _settled(self, drive: Drive) -> bool:
        if self.velocity != 0.0:
            return False
        target = self._target(drive)
        if target is None:
            return True
        reachable = min(self.model.stop_max, max(self.lower_limit(), target))
        return abs(reachable - self.position) < SETTLED_STEPS

    def _target(self, drive: Drive) -> float | None:
        if drive.torque_on:
            return drive.goal_actual
        return drive.hand_actual

    def _substeps(self, steps: int, h: float, drive: Drive) -> None:
        """`steps` integration steps of `h` seconds.

        What does not change within one interval (target, speed and acceleration caps, stops,
        load gain and limit) is worked out once: the emulator integrates every motor it is asked
        about on each packet, and on two cores its time is taken from the client it serves.
        """
        model = self.model
        target = self._target(drive)
        low, high = self.lower_limit(), model.stop_max
        if target is not None:
            tau = model.tracking_tau_s if drive.torque_on else model.hand_tau_s
            vmax = model.max_speed_steps_s
            if drive.torque_on and drive.max_speed_steps_s > 0:
                vmax = min(vmax, drive.max_speed_steps_s)
            limited_accel = drive.torque_on and drive.max_accel_steps_s2 > 0
            dv_max = drive.max_accel_steps_s2 * h
            reachable = min(high, max(low, target))
        loaded = drive.torque_on and target is not None
        if loaded:
            load_per_step, p_gain = model.load_per_step_error, drive.p_gain_scale
            limit = max(0.0, min(1000.0, drive.torque_limit_permille))
        full_load_heating = model.heating_c_per_s_at_full_load
        ambient, thermal_tau = model.ambient_c, model.thermal_tau_s
        position, velocity, load, temperature = self.position, self.velocity, self.load_permille, self.temperature_c
        for _ in range(steps):
            if target is not None:
                desired = max(-vmax, min(vmax, (target - position) / tau))
                if limited_accel:
                    velocity += max(-dv_max, min(dv_max, desired - velocity))
                else:
                    velocity = desired
            else:
                velocity = 0.0
            position += velocity * h
            if position < low or position > high:
                position = min(high, max(low, position))
                velocity = 0.0
            if target is not None and abs(velocity) < SNAP_SPEED_STEPS_S and abs(reachable - position) < SETTLED_STEPS:
                position, velocity = reachable, 0.0
            if loaded:
                # Gravity pulls one way: the holding load has a fixed sign.
                error = target - position
                load = max(-limit, min(limit, error * load_per_step * p_gain + model.holding_load_permille))
            else:
                load = 0.0
            temperature += h * ((ambient - temperature) / thermal_tau + full_load_heating * (load / 1000.0) ** 2)
        self.position, self.velocity, self.load_permille, self.temperature_c = position, velocity, load, temperature

    def _load(self, drive: Drive, target: float | None) -> float:
        if not drive.torque_on or target is None:
            return 0.0
        error = target - self.position
        # Gravity pulls one way: the holding load has a fixed sign.
        load = error * self.model.load_per_step_error * drive.p_gain_scale + self.model.holding_load_permille
        limit = max(0.0, min(1000.0, drive.torque_limit_permille))
        return max(-limit, min(limit, load))

    def _settle(self, dt_s: float, drive: Drive) -> None:
        """Long idle gap: jump to where the joint ends up and relax the temperature exactly."""
        target = self._target(drive)
        if target is not None:
            self.position = min(self.model.stop_max, max(self.lower_limit(), target))
        self.velocity = 0.0
        self.load_permille = self._load(drive, target)
        model = self.model
        heating = model.heating_c_per_s_at_full_load * (self.load_permille / 1000.0) ** 2
        steady = model.ambient_c + heating * model.thermal_tau_s
        decay = math.exp(-dt_s / model.thermal_tau_s)
        self.temperature_c = steady + (self.temperature_c - steady) * decay
