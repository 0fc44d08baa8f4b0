"""How closely the emulated follower moves like the recorded one, per joint, on episodes the fit did not see.

Per joint, for the real arm and for its emulation under the same goals (`replay.replay_arm`):
- lag: the frame shift that best matches state to goal;
- tracking error: mean and p95 of |state[t+1] - action[t]|;
- gravity sag (shoulder_lift, elbow_flex): mean state - goal while the goal has been still for
  STILL_FRAMES, in the middle of the range (at its ends an SO-101 rests folded on its own body,
  which is contact, not sag);
and the mean |emulated - real| state. Targets: the tracking error's ratio, emulated over real, within
ERROR_RATIO_BOUNDS, the lag within one frame, the sag of the right sign and within 50 %; a joint
whose goal held still in the held-out episodes (moved under MIN_MOTION_DEG) is reported, not judged.
"""

import numpy as np

from robot.joints import JOINT_NAMES
from robot.virtual.servo_params import ServoParams
from robot.virtual.twin.recording import DEG_PER_STEP, MIN_MOTION_DEG, ArmRecording
from robot.virtual.twin.replay import held_object, replay_arm

SAG_JOINTS = ("shoulder_lift", "elbow_flex")
WORKING_FRACTION = 0.8  # sag counts only within this fraction of the half range around the middle
LAG_FRAMES_MAX = 10
STILL_FRAMES = 10  # the goal held within STILL_DEG for this many frames counts as holding still
STILL_DEG = 0.5
ERROR_RATIO_BOUNDS = (0.8, 1.2)  # the goal for each joint's held-out tracking error, emulated / real

Trajectories = list[tuple[np.ndarray, np.ndarray]]


def working_masks(recording: ArmRecording) -> list[np.ndarray]:
    """Per episode, the frames where shoulder_lift and elbow_flex are inside the middle of their range."""
    masks = []
    for state, _ in recording.trajectories:
        mask = np.ones(len(state), dtype=bool)
        for joint in SAG_JOINTS:
            low, high = recording.ranges_steps[joint]
            half_span_deg = (high - low) / 2 * DEG_PER_STEP
            mask &= np.abs(state[:, JOINT_NAMES.index(joint)]) < WORKING_FRACTION * half_span_deg
        masks.append(mask)
    return masks


def joint_metrics(episodes: Trajectories, i: int, working: list[np.ndarray]) -> dict[str, float]:
    """Lag (frames), mean and p95 |state[t+1] - action[t]| and sag (deg) of joint `i` over `episodes`."""
    lag_err = []
    for k in range(LAG_FRAMES_MAX + 1):
        errs = [np.abs(s[k:, i] - a[: len(a) - k, i]) for s, a in episodes if len(s) > k]
        lag_err.append(float(np.mean(np.concatenate(errs))))
    one = np.concatenate([np.abs(s[1:, i] - a[:-1, i]) for s, a in episodes])
    sag = []
    for (s, a), mask in zip(episodes, working, strict=True):
        for t in range(STILL_FRAMES, len(a)):
            window = a[t - STILL_FRAMES : t + 1, i]
            if mask[t] and window.max() - window.min() < STILL_DEG:
                sag.append(s[t, i] - a[t, i])
    return {
        "lag_frames": int(np.argmin(lag_err)),
        "err_mean_deg": float(one.mean()),
        "err_p95_deg": float(np.percentile(one, 95)),
        "sag_deg": float(np.mean(sag)) if sag else float("nan"),
        "still_frames": len(sag),
    }


def emulate(recording: ArmRecording, params: ServoParams) -> list[np.ndarray]:
    """The emulated arm's states under each episode's recorded goals (`params` at the arm's supply)."""
    return [
        replay_arm(a, s[0], recording.ranges_steps, params, recording.fps, held_object(s, a))
        for s, a in recording.trajectories
    ]


def fidelity(recording: ArmRecording, emulated: list[np.ndarray]) -> dict[str, dict]:
    """Per joint the fit used: real and emulated metrics, the error ratio and the targets met."""
    working = working_masks(recording)
    real_episodes = list(recording.trajectories)
    sim_episodes = [(e, a) for e, (_, a) in zip(emulated, real_episodes, strict=True)]
    report = {}
    for i, joint in enumerate(JOINT_NAMES):
        if joint in recording.skipped:
            continue
        real, emu = joint_metrics(real_episodes, i, working), joint_metrics(sim_episodes, i, working)
        diff = np.concatenate([np.abs(e[:, i] - s[:, i]) for e, (s, _) in zip(emulated, real_episodes, strict=True)])
        ratio = emu["err_mean_deg"] / real["err_mean_deg"] if real["err_mean_deg"] > 0 else float("nan")
        asked = float(max(np.ptp(a[:, i]) for _, a in real_episodes))
        if asked < MIN_MOTION_DEG:  # a joint that held still has no lag nor tracking error to compare
            report[joint] = {
                "real": real,
                "emulated": emu,
                "error_ratio": ratio,
                "state_diff_mean_deg": float(diff.mean()),
                "targets": {},
                "not_judged": f"its goal moved {asked:.1f} deg in the held-out episodes",
            }
            continue
        targets = {
            "lag_within_1_frame": abs(emu["lag_frames"] - real["lag_frames"]) <= 1,
            "error_ratio_within_0.8_1.2": bool(ERROR_RATIO_BOUNDS[0] <= ratio <= ERROR_RATIO_BOUNDS[1]),
        }
        if joint in SAG_JOINTS and np.isfinite(real["sag_deg"]) and real["sag_deg"] != 0:
            same_sign = np.sign(emu["sag_deg"]) == np.sign(real["sag_deg"])
            targets["sag_sign_and_within_50pct"] = bool(same_sign and abs(emu["sag_deg"] / real["sag_deg"] - 1) <= 0.5)
        report[joint] = {
            "real": real,
            "emulated": emu,
            "error_ratio": ratio,
            "state_diff_mean_deg": float(diff.mean()),
            "targets": targets,
        }
    return report
