"""Every parameter of the fitted STS3215 servo model (`virtual.dynamics: fitted`), in one table.

Each field names its unit and its source: the Feetech datasheet or memory table, the SO-101 URDF
(TheRobotStudio/SO-ARM100 `Simulation/SO101/so101_new_calib.urdf`, Apache-2.0), or a fit to real
SO-101 follower recordings by `benchmarks/servo_fit.py`. The fitted numbers live in
`servo_fitted.json` beside this file (written by that tool, committed); everything else is here.

The position loop's own settings are not in the table: the model reads them from each motor's
registers (P_Coefficient, D_Coefficient, Acceleration, Maximum_Acceleration, Torque_Limit,
Max_Torque_Limit, Goal_Velocity), as the firmware does.
"""

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path

from robot.joints import JOINT_NAMES

FITTED_FILE = Path(__file__).with_name("servo_fitted.json")
STEPS_PER_REV = 4096
GRAVITY_M_S2 = 9.81


@dataclass(frozen=True)
class ServoParams:
    """The fitted servo model's constants; per-joint tuples follow `robot.joints.JOINT_NAMES`."""

    # --- datasheet (STS3215 12 V, 1:345, the emulated followers' supply) ---------------------------
    stall_torque_nm: float = 2.94  # stall torque, N·m: 30 kg·cm (Feetech STS3215 C018/C047 at 12 V)
    no_load_speed_steps_s: float = 3072.0  # no-load speed, steps/s: 45 rpm at 12 V × 4096 / 60 (datasheet)
    accel_unit_steps_s2: float = 100.0  # Acceleration register unit, steps/s² (Feetech memory table)
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
    latency_s: float = 0.04  # bus + firmware delay before a new Goal_Position acts, s (fitted)
    backlash_steps: float = 6.0  # gearbox play at the output, steps (datasheet ≤ 0.5° = 5.7; fitted)
    # --- gripper on an object (not fitted: the recordings do not say when an object was held) -----
    object_stiffness_per_step: float = 0.01  # object's push back, fraction of stall torque per step squeezed
    object_max_squeeze_steps: float = 80.0  # the object cannot be squeezed further than this, steps

    def d_duty(self, joint: str) -> float:
        """`d_duty_s_per_step` of one joint."""
        return self.d_duty_s_per_step[JOINT_NAMES.index(joint)]


FITTED_KEYS = ("p_duty_per_step", "d_duty_s_per_step", "latency_s", "backlash_steps")


def load_fitted(path: Path = FITTED_FILE) -> ServoParams:
    """The table with the fitted rows from `path` (the defaults where it is missing).

    Raises:
        ValueError: the file names a parameter the table does not have.
    """
    if not path.is_file():
        return ServoParams()
    raw = json.loads(path.read_text())["params"]
    known = {f.name for f in fields(ServoParams)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"{path}: unknown servo parameters {unknown}; expected some of {sorted(known)}")
    values = {k: tuple(v) if isinstance(v, list) else float(v) for k, v in raw.items()}
    return replace(ServoParams(), **values)
