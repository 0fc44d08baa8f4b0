"""How a follower answered its commands in one episode: its response kernel, estimated from state and action.

The state's velocity is modelled as a sum of the action's velocities at lags -before..+after frames,
one kernel h shared by the moving joints, fitted by ridge least squares:

    state[t+1] - state[t]  ~  sum_k  h[k] * (action[t-k+1] - action[t-k])

A follower reads its state before the tick's action is sent, so the state answers an action one
frame later at the earliest: h[k] for k <= 0 is ~0 on a real recording, and the kernel's centroid
is the follower's mean delay (an SO-101 on the virtual rig's fitted servo model: 4.3-4.6 frames at
30 fps). Actions shifted against the state move the whole kernel: earlier actions push its mass to
k <= 0, later ones push its centroid past any servo's delay. Deconvolving keeps the kernel's onset
sharp where the peak of a plain cross-correlation is smeared by the motion's own smoothness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BEFORE_S, AFTER_S = 0.2, 0.4  # the kernel's span before and after the action, s (-6..+12 frames at 30 fps)
MIN_TRAVEL = 5.0  # joint units (degrees): a joint whose action spans less says nothing about the response
RIDGE = 0.01  # ridge weight, a share of the mean diagonal of the normal equations: steadies smooth motion
MIN_ROWS = 30  # equations per joint at least: shorter episodes give no estimate


@dataclass(frozen=True)
class Response:
    """A follower's estimated answer to its commands in one episode."""

    delay_frames: float  # the kernel's centroid: mean delay of the state behind its action, frames
    early_share: float  # share of the kernel at lags <= 0 (the state moving with or before its command)
    fit: float  # share of the state's velocity the kernel explains (R², uncentred), 0..1


def follower_response(state: np.ndarray, action: np.ndarray, fps: float) -> Response | None:
    """The response kernel of state to action; None when no joint moves enough or the episode is too short.

    `state`, `action`: (frames, joints), the same joints (body joints: grippers stall on objects).
    """
    state, action = np.asarray(state, dtype=np.float64), np.asarray(action, dtype=np.float64)
    moving = np.ptp(action, axis=0) >= MIN_TRAVEL if len(action) else np.zeros(0, dtype=bool)
    lags = np.arange(-math.ceil(BEFORE_S * fps), math.ceil(AFTER_S * fps) + 1)
    state_speed, action_speed = np.diff(state[:, moving], axis=0), np.diff(action[:, moving], axis=0)
    times = np.arange(lags[-1], len(action_speed) + lags[0])  # every t with t - k inside the episode
    if not moving.any() or len(times) < MIN_ROWS:
        return None
    rows = action_speed[times[:, None] - lags[None, :]]  # (times, lags, joints)
    design = rows.transpose(2, 0, 1).reshape(-1, len(lags))  # joint after joint
    target = state_speed[times].T.reshape(-1)
    gram = design.T @ design
    ridge = RIDGE * np.trace(gram) / len(lags)
    if not ridge > 0:
        return None
    kernel = np.linalg.solve(gram + ridge * np.eye(len(lags)), design.T @ target)
    total = kernel.sum()
    energy = float(target @ target)
    if not (total > 0 and energy > 0):  # a state that does not follow its action: nothing to time
        return None
    fit = 1.0 - float(np.sum((target - design @ kernel) ** 2)) / energy
    return Response(float(lags @ kernel / total), float(kernel[lags <= 0].sum() / total), fit)
