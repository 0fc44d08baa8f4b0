"""One held-out episode, real and emulated (before and after the fit), every joint on the same axes."""

from pathlib import Path

import numpy as np

from robot.joints import JOINT_NAMES
from robot.virtual.twin.recording import ArmRecording


def plot_episode(recording: ArmRecording, before: np.ndarray, after: np.ndarray, path: Path) -> None:
    """The first episode of `recording` with the emulated states `before` and `after`, as a PNG at `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    state, action = recording.trajectories[0]
    t = np.arange(len(state)) / recording.fps
    fig, axes = plt.subplots(3, 2, figsize=(12, 9), sharex=True)
    for i, (joint, ax) in enumerate(zip(JOINT_NAMES, axes.flat, strict=True)):
        ax.plot(t, action[:, i], color="0.6", lw=1, label="goal (leader)")
        ax.plot(t, state[:, i], color="C0", lw=1.4, label="real follower")
        ax.plot(t, before[:, i], color="C1", lw=1, ls=":", label="emulated, before the fit")
        ax.plot(t, after[:, i], color="C3", lw=1.2, ls="--", label="emulated, fitted")
        why = recording.skipped.get(joint)
        ax.set_title(joint + (f" (not fitted: {why.split(' (')[0]})" if why else ""), fontsize=10)
        ax.set_ylabel("deg")
    for ax in axes[-1]:
        ax.set_xlabel("s")
    axes[0, 0].legend(loc="best", fontsize=8)
    fig.suptitle(f"{recording.root.name}, {recording.arm}, episode {recording.episodes[0]} (held out)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
