"""The three virtual viewpoints: overhead (fixed, above the table) and one on each gripper.

A renderer is a callable `SceneState -> image` (uint8 HxWx3 RGB, a new array every call).
"""

from collections.abc import Callable

import numpy as np

from robot.cameras.virtual.drawing import FLOOR_RGB, WALL_RGB, draw_arm, draw_cloth, draw_table
from robot.cameras.virtual.projection import PinholeView, focal_for_fov, look_at
from robot.cameras.virtual.scene import SceneLayout, SceneState
from robot.joints import CameraRole, Side

Renderer = Callable[[SceneState], np.ndarray]

OVERHEAD_POSITION_M = np.array([0.0, 0.17, 0.80])  # above the table, between the arms
OVERHEAD_FOV_DEG = 62.0  # horizontal, a typical USB webcam
WRIST_FOV_DEG = 100.0  # horizontal, the wide lenses sold for SO-101 wrist mounts
# The wrist camera in the gripper link's frame: above the jaws' plane (y = 0), looking along the
# fingers (-z) and tilted towards them, so the jaws close from the sides of the lower image.
_WRIST_POSITION_M = np.array([0.006, 0.045, -0.010])
_WRIST_ROTATION = look_at(
    _WRIST_POSITION_M, _WRIST_POSITION_M + np.array([0.0, -0.3, -1.0]), np.array([0.0, -1.0, 0.0])
)


class OverheadRenderer:
    """Both arms, the table and the cloth from a camera above the table, bases at the bottom."""

    def __init__(self, layout: SceneLayout, width: int, height: int) -> None:
        target = OVERHEAD_POSITION_M * np.array([1.0, 1.0, 0.0])
        rotation = look_at(OVERHEAD_POSITION_M, target, np.array([0.0, -1.0, 0.0]))
        self.view = PinholeView(rotation, OVERHEAD_POSITION_M, focal_for_fov(width, OVERHEAD_FOV_DEG), width, height)
        # The camera never moves, so the table is drawn once.
        self._background = np.empty((height, width, 3), np.uint8)
        self._background[:] = FLOOR_RGB
        draw_table(self._background, self.view, layout)

    def __call__(self, state: SceneState) -> np.ndarray:
        """Render the scene."""
        image = self._background.copy()
        draw_cloth(image, self.view, state.cloth)
        for side in Side:
            draw_arm(image, self.view, state.arms[side])
        return image


class WristRenderer:
    """What a camera on one gripper sees: its jaws, the table, the cloth, the other arm."""

    def __init__(self, layout: SceneLayout, side: Side, width: int, height: int) -> None:
        self._layout = layout
        self._side = side
        self._other = Side.RIGHT if side is Side.LEFT else Side.LEFT
        self._width = width
        self._height = height
        self._focal_px = focal_for_fov(width, WRIST_FOV_DEG)
        self._background = np.empty((height, width, 3), np.uint8)
        self._background[:] = WALL_RGB  # filled once: copying is ten times faster than filling

    def view(self, state: SceneState) -> PinholeView:
        """The camera's pose in the world, following its gripper."""
        gripper = state.arms[self._side].gripper
        rotation = _WRIST_ROTATION @ gripper[:3, :3].T  # world -> gripper -> camera
        position = gripper[:3, :3] @ _WRIST_POSITION_M + gripper[:3, 3]
        return PinholeView(rotation, position, self._focal_px, self._width, self._height)

    def __call__(self, state: SceneState) -> np.ndarray:
        """Render the scene."""
        view = self.view(state)
        image = self._background.copy()
        draw_table(image, view, self._layout)
        draw_cloth(image, view, state.cloth)
        draw_arm(image, view, state.arms[self._other])
        draw_arm(image, view, state.arms[self._side])
        return image


def make_renderer(view: CameraRole, layout: SceneLayout, width: int, height: int) -> Renderer:
    """The renderer for a viewpoint."""
    match view:
        case CameraRole.OVERHEAD:
            return OverheadRenderer(layout, width, height)
        case CameraRole.LEFT_WRIST:
            return WristRenderer(layout, Side.LEFT, width, height)
        case CameraRole.RIGHT_WRIST:
            return WristRenderer(layout, Side.RIGHT, width, height)
        case _:
            raise ValueError(f"unknown virtual view {view!r}; expected one of {[v.value for v in CameraRole]}")
