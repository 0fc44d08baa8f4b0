"""Every parameter of the fitted STS3215 servo model (`virtual.dynamics: fitted`), in one table.

Each field names its unit and its source: the Feetech datasheet or memory table, the SO-101 URDF
(TheRobotStudio/SO-ARM100 `Simulation/SO101/so101_new_calib.urdf`, Apache-2.0), or a fit to real
SO-101 follower recordings (2026-12-04, by that day's `benchmarks/servo_fit.py`; a rig's own tables are
`so101-fit`'s, `servo_table.py`). The committed fitted numbers live in
`servo_fitted.json` beside this file (written by that tool, committed); everything else is here.

The position loop's own settings are not in the table: the model reads them from each motor's
registers (P_Coefficient, D_Coefficient, Acceleration, Maximum_Acceleration, Torque_Limit,
Max_Torque_Limit, Goal_Velocity), as the firmware does.
"""

import json
import math
from dataclasses import dataclass, fields, replace
from pathlib import Path

from robot.joints import JOINT_NAMES

FITTED_FILE = Path(__file__).with_name("servo_fitted.json")
# The position-loop gains LeRobot 0.6.1's SOFollower.configure() writes to every follower motor.
LEROBOT_GAINS = {"P_Coefficient": 16, "I_Coefficient": 0, "D_Coefficient": 32}
LEROBOT_ACCELERATION = 254  # its Acceleration and Maximum_Acceleration, register units
LEROBOT_GRIPPER = {"Max_Torque_Limit": 500, "Protection_Current": 250, "Overload_Torque": 25}  # the gripper's
STEPS_PER_REV = 4096
GRAVITY_JOINTS = ("shoulder_lift", "elbow_flex", "wrist_flex")  # the joints the arm's weight loads
GRAVITY_M_S2 = 9.81


@dataclass(frozen=True)
class ServoParams:
    """The fitted servo model's constants; per-joint tuples follow `robot.joints.JOINT_NAMES`."""

    # --- datasheet (STS3215 12 V, 1:345, the emulated followers' supply) ---------------------------
    stall_torque_nm: float = 2.94  # stall torque, N·m: 30 kg·cm (Feetech STS3215 C018/C047 at 12 V)
    no_load_speed_steps_s: float = 3072.0  # no-load speed, steps/s: 45 rpm at 12 V × 4096 / 60 (datasheet)
    accel_unit_steps_s2: float = 100.0  # Acceleration register unit, steps/s² (Feetech memory table)
    rated_supply_v: float = 12.0  # the supply the two figures above are given at, V (datasheet)
    # --- URDF: planar gravity model of the shoulder_lift / elbow_flex / wrist_flex chain ----------
    # All three axes are parallel (+y in the URDF); a positive joint angle lowers the arm, and a
    # positive LeRobot degree (and encoder step) is a positive URDF angle. Positions are (x, z) in
    # metres at the zero pose (every joint at the middle of its calibrated range), from URDF forward
    # kinematics; the wrist group lumps wrist_link, gripper_link and the moving jaw.
    gravity_axis_xz_m: tuple[tuple[float, float], ...] = ((0.0692, 0.1166), (0.0972, 0.2292), (0.2321, 0.2344))
    gravity_com_xz_m: tuple[tuple[float, float], ...] = ((0.0776, 0.2064), (0.1953, 0.2324), (0.2992, 0.2358))
    gravity_mass_kg: tuple[float, ...] = (0.103, 0.104, 0.178)  # upper arm, lower arm, wrist group (URDF)
    # --- fitted (servo_fitted.json; these defaults are the first-principles starting point) -------
    # Position loop: PWM duty (0..1) = P·p_duty_per_step·error − D·d_duty_s_per_step·speed, where P and
    # D are the motor's P_Coefficient and D_Coefficient registers; the motor then turns at
    # no_load_speed·(duty + external torque / stall torque).
    p_duty_per_step: float = 0.0012  # duty per encoder step of error, per P_Coefficient unit (fitted)
    d_duty_s_per_step: tuple[float, ...] = (4e-5,) * 6  # duty per step/s of speed, per D unit (fitted)
    # Each joint's position-loop gain against the arm's p_duty_per_step: gear wear, a stiffer or looser
    # joint, a gripper on a cloth (fitted per joint by so101-fit where the recording moves it enough)
    p_scale: tuple[float, ...] = (1.0,) * 6
    latency_s: float = 0.04  # bus + firmware delay before a new Goal_Position acts, s (fitted)
    backlash_steps: float = 5.7  # gearbox play at the output, steps: the datasheet's bound, ≤ 0.5° (not fitted)
    # --- gripper on an object (not fitted: the recordings do not say when an object was held) -----
    object_stiffness_per_step: float = 0.01  # object's push back, fraction of stall torque per step squeezed
    object_max_squeeze_steps: float = 80.0  # the object cannot be squeezed further than this, steps

    def at_supply(self, supply_v: float) -> "ServoParams":
        """The table for a motor fed `supply_v` volts: stall torque and no-load speed scale with it.

        A DC motor's stall current (so its torque) and its back-EMF-limited speed are both
        proportional to the voltage across it: a follower on a 7.4 V supply (the rig file's
        `virtual.follower_supply_v`, as a 5 V build or a missing 12 V adapter gives) sags under
        gravity and moves at 7.4/12 of the rated figures.
        """
        scale = supply_v / self.rated_supply_v
        return replace(
            self,
            stall_torque_nm=self.stall_torque_nm * scale,
            no_load_speed_steps_s=self.no_load_speed_steps_s * scale,
            rated_supply_v=supply_v,
        )

    def d_duty(self, joint: str) -> float:
        """`d_duty_s_per_step` of one joint."""
        return self.d_duty_s_per_step[JOINT_NAMES.index(joint)]

    def p_duty(self, joint: str) -> float:
        """One joint's duty per step of error, per P_Coefficient unit: the arm's, scaled by `p_scale`."""
        return self.p_duty_per_step * self.p_scale[JOINT_NAMES.index(joint)]

    # --- what the model implies: the bounds tests and reports derive from the table --------------

    def time_constant_s(self, joint: str) -> float:
        """The loop's first-order time constant under LeRobot's gains, s (below the torque limit).

        Unsaturated, the motor turns at w·(kp·e)/(1 + w·kd) (`servo_dynamics.py`), so the error
        decays as exp(-t/τ) with τ = (1 + w·kd)/(w·kp).
        """
        kp = self.p_duty(joint) * LEROBOT_GAINS["P_Coefficient"]
        kd = self.d_duty(joint) * LEROBOT_GAINS["D_Coefficient"]
        w = self.no_load_speed_steps_s
        return (1.0 + w * kd) / (w * kp)

    def tracking_lag_s(self, joint: str) -> float:
        """How far behind a steadily moving goal the joint runs, s: the latency plus the time constant."""
        return self.latency_s + self.time_constant_s(joint)

    def move_s(
        self, joint: str, distance_steps: float, within_steps: float, torque_limit_fraction: float = 1.0
    ) -> float:
        """About how long a joint takes to get within `within_steps` of rest from `distance_steps` away, s.

        Under LeRobot's gains: the latency; then, while the error is large enough to saturate the loop,
        the speed the torque limit allows (reached under LeRobot's Acceleration, 254); then the loop's
        exponential tail.
        No load: gravity shifts where the joint rests (`holding_offset_steps`), little how fast.
        """
        kp = self.p_duty(joint) * LEROBOT_GAINS["P_Coefficient"]
        saturated_steps = torque_limit_fraction / kp
        seconds, error = self.latency_s, float(distance_steps)
        if error > saturated_steps:
            speed = self.no_load_speed_steps_s * torque_limit_fraction
            accel = LEROBOT_ACCELERATION * self.accel_unit_steps_s2
            seconds += (error - saturated_steps) / speed + speed / accel
            error = saturated_steps
        if error > within_steps:
            seconds += self.time_constant_s(joint) * math.log(error / within_steps)
        return seconds

    def holding_offset_steps(self, load_fraction: float) -> float:
        """How far from its goal a joint holding `load_fraction` of its stall torque rests, steps.

        The loop's give under the load, plus half the gearbox play the load takes up.
        """
        kp = self.p_duty_per_step * LEROBOT_GAINS["P_Coefficient"]
        return abs(load_fraction) / kp + (self.backlash_steps / 2.0 if load_fraction else 0.0)

    def worst_gravity_fraction(self, joint: str) -> float:
        """At most how much gravity loads `joint` in any pose, as a fraction of stall torque.

        Each link beyond the joint counted at its full distance from the axis; 0 for a joint gravity
        does not load.
        """
        if joint not in GRAVITY_JOINTS:
            return 0.0
        first = GRAVITY_JOINTS.index(joint)
        axis = self.gravity_axis_xz_m[first]
        moment = sum(
            mass * math.dist(axis, com)
            for mass, com in zip(self.gravity_mass_kg[first:], self.gravity_com_xz_m[first:], strict=True)
        )
        return GRAVITY_M_S2 * moment / self.stall_torque_nm


FITTED_KEYS = ("p_duty_per_step", "latency_s", "d_duty_s_per_step", "p_scale", "object_stiffness_per_step")


def load_fitted(path: Path = FITTED_FILE) -> ServoParams:
    """The table with the fitted rows from `path` (the defaults where it is missing).

    Raises:
        ValueError: the file names a parameter the table does not have.
    """
    if not path.is_file():
        return ServoParams()
    return params_from_rows(json.loads(path.read_text())["params"], str(path))


def params_from_rows(rows: dict, where: str, base: ServoParams | None = None) -> ServoParams:
    """The table with `rows` (name -> number, or list for a per-joint row) over `base` (default: the defaults).

    Raises:
        ValueError: a row the table does not have, or a per-joint row that is not one value a joint.
    """
    known = {f.name for f in fields(ServoParams)}
    unknown = sorted(set(rows) - known)
    if unknown:
        raise ValueError(f"{where}: unknown servo parameters {unknown}; expected some of {sorted(known)}")
    values = {k: tuple(float(x) for x in v) if isinstance(v, list) else float(v) for k, v in rows.items()}
    for name in ("d_duty_s_per_step", "p_scale"):
        if name in values and len(values[name]) != len(JOINT_NAMES):  # type: ignore[arg-type]
            raise ValueError(f"{where}: {name} has {len(values[name])} values; expected one per joint, 6")  # type: ignore[arg-type]
    return replace(base or ServoParams(), **values)
