"""An overhead sketch of the commanded motion, beside the recorded overhead video.

    sketches = overhead_sketches(sent, fps=30, frames=[0, 40, 80], width=320, height=240)
    panel = side_by_side(sketches[40], recorded[40])

The virtual rig's own renderer draws it (`robot.cameras.virtual`: SO-101 forward kinematics from
the URDF, the table, the cloth): the scene is stepped through every commanded frame on a simulated
clock, so the cloth is carried and folded by the commanded motion as it would be on the virtual
rig, and the chosen frames are rendered from above.
"""

from collections.abc import Sequence

import cv2
import numpy as np

from policies.replay.pacing import SimulatedClock
from robot.cameras.virtual.scene import VirtualScene
from robot.cameras.virtual.views import OverheadRenderer
from robot.joint_values import JointValues

_LABEL_RGB = (255, 255, 255)


def still_frames(replayed: int, count: int, include: Sequence[int] = ()) -> list[int]:
    """`count` frames spread over `replayed` frames, plus `include` (e.g. the first limit hit)."""
    if replayed <= 0 or count <= 0:
        return []
    spread = np.linspace(0, replayed - 1, min(count, replayed)).round().astype(int).tolist()
    return sorted({*spread, *(f for f in include if 0 <= f < replayed)})


def overhead_sketches(
    commanded: np.ndarray, fps: float, frames: Sequence[int], *, width: int = 320, height: int = 240
) -> dict[int, np.ndarray]:
    """Overhead renderings (uint8 (height, width, 3) RGB) of the commanded pose at each of `frames`.

    `commanded` is float (n, 12) in BIMANUAL_KEYS order with no NaN.
    """
    wanted = set(frames)
    if not wanted:
        return {}
    clock = SimulatedClock(0.0)
    pose = [JointValues.from_vector(commanded[0])]
    scene = VirtualScene(lambda: pose[0], clock=clock)
    renderer = OverheadRenderer(scene.layout, width, height)
    out: dict[int, np.ndarray] = {}
    for k in range(min(max(wanted) + 1, len(commanded))):
        pose[0] = JointValues.from_vector(commanded[k])
        clock.now_s = k / fps
        state = scene.observe()
        if k in wanted:
            out[k] = renderer(state)
    return out


def _fit(image: np.ndarray, height: int) -> np.ndarray:
    if image.shape[0] == height:
        return image
    width = round(image.shape[1] * height / image.shape[0])
    return cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)


def _label(image: np.ndarray, text: str) -> np.ndarray:
    out = image.copy()
    cv2.rectangle(out, (0, 0), (out.shape[1], 18), (0, 0, 0), -1)
    cv2.putText(out, text, (4, 13), cv2.FONT_HERSHEY_SIMPLEX, 0.42, _LABEL_RGB, 1, cv2.LINE_AA)
    return out


def side_by_side(frame: int, sketch: np.ndarray, recorded: np.ndarray | None, height: int = 240) -> np.ndarray:
    """One row: the sketch of the commanded pose, then the recorded overhead frame (when there is one)."""
    parts = [_label(_fit(sketch, height), f"frame {frame}: commanded (sketch)")]
    if recorded is not None:
        parts.append(_label(_fit(recorded, height), f"frame {frame}: recorded overhead"))
    gap = np.full((height, 6, 3), 255, np.uint8)
    row = [parts[0]]
    for part in parts[1:]:
        row += [gap, part]
    return np.concatenate(row, axis=1)
