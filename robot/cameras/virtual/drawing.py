"""Drawing the table, the cloth and the arms into an RGB image through a `PinholeView`.

Painter's algorithm: far things first. Cheap by construction: a few dozen OpenCV fills and lines
per frame, no per-pixel work in Python.
"""

from collections.abc import Sequence

import cv2
import numpy as np

from robot.cameras.virtual.kinematics import ArmPose
from robot.cameras.virtual.projection import NEAR_M, SHIFT, PinholeView, clip_polygon, clip_segment
from robot.cameras.virtual.scene import SceneLayout

Color = tuple[int, int, int]  # RGB
FLOOR_RGB: Color = (64, 66, 72)
WALL_RGB: Color = (128, 132, 140)
TABLE_RGB: Color = (190, 165, 128)
TABLE_LINE_RGB: Color = (168, 143, 106)
TAPE_RGB: Color = (215, 60, 50)
CLOTH_TOP_RGB: tuple[Color, Color] = ((58, 104, 190), (74, 124, 210))  # a two-tone check, top side
CLOTH_UNDER_RGB: Color = (170, 186, 228)  # the underside shows where the cloth is folded over
PRINTED_RGB: Color = (240, 196, 40)  # the arms' 3-D printed parts (the URDF's colour)
SERVO_RGB: Color = (28, 28, 30)
LINK_RADIUS_M = 0.017
SERVO_RADIUS_M = 0.022
JAW_RADIUS_M = 0.006
_MAX_THICKNESS_PX = 120  # a link right at the lens would otherwise fill the frame
_TABLE_LINE_STEP_M = 0.1
_CLOTH_THICKNESS_M = 0.004


def _thickness(view: PinholeView, radius_m: float, depth_m: float) -> int:
    return int(min(_MAX_THICKNESS_PX, max(1.0, 2 * radius_m * view.focal_px / max(depth_m, NEAR_M))))


def draw_polygon(image: np.ndarray, view: PinholeView, camera_points: np.ndarray, color: Color) -> None:
    """Fill a convex polygon given in camera coordinates, clipped at the near plane."""
    if (camera_points[:, 2] < NEAR_M).any():
        camera_points = clip_polygon(camera_points)
        if len(camera_points) < 3:
            return
    cv2.fillConvexPoly(image, view.to_pixels(camera_points), color, cv2.LINE_AA, SHIFT)


def draw_segment(
    image: np.ndarray, view: PinholeView, a: np.ndarray, b: np.ndarray, radius_m: float, color: Color
) -> None:
    """A thick line between two points given in camera coordinates, width shrinking with depth."""
    clipped = clip_segment(a, b)
    if clipped is None:
        return
    a, b = clipped
    pixels = view.to_pixels(np.stack([a, b])).tolist()
    thickness = _thickness(view, radius_m, 0.5 * (a[2] + b[2]))
    cv2.line(image, pixels[0], pixels[1], color, thickness, cv2.LINE_AA, SHIFT)


def draw_segments(
    image: np.ndarray,
    view: PinholeView,
    segments: np.ndarray,
    radii_m: Sequence[float],
    colors: Sequence[Color],
) -> None:
    """Thick lines, in the given order, between point pairs (N, 2, 3) in camera coordinates."""
    depth = segments[..., 2]
    pixels = view.to_pixels(segments).tolist()
    thickness = np.clip(
        2 * np.asarray(radii_m) * view.focal_px / np.maximum(depth.mean(axis=1), NEAR_M), 1, _MAX_THICKNESS_PX
    )
    in_front = (depth >= NEAR_M).all(axis=1)
    for i, (radius, color) in enumerate(zip(radii_m, colors, strict=True)):
        if in_front[i]:
            cv2.line(image, pixels[i][0], pixels[i][1], color, int(thickness[i]), cv2.LINE_AA, SHIFT)
        else:
            draw_segment(image, view, segments[i, 0], segments[i, 1], radius, color)


def _table_lines(layout: SceneLayout) -> tuple[np.ndarray, list[float], list[Color]]:
    (x0, x1), (y0, y1) = layout.table_x_m, layout.table_y_m
    step = _TABLE_LINE_STEP_M
    lines = [([x, y0, 0.0], [x, y1, 0.0]) for x in np.arange(np.ceil(x0 / step), np.floor(x1 / step) + 1) * step]
    lines += [([x0, y, 0.0], [x1, y, 0.0]) for y in np.arange(np.ceil(y0 / step), np.floor(y1 / step) + 1) * step]
    half = layout.cloth_size_m / 2
    cx, cy = layout.cloth_center_m
    tape = ([cx - half - 0.02, cy - half - 0.015, 0.0], [cx + half + 0.02, cy - half - 0.015, 0.0])
    radii = [0.0015] * len(lines) + [0.006]
    colors = [TABLE_LINE_RGB] * len(lines) + [TAPE_RGB]
    return np.array([*lines, tape], dtype=float), radii, colors


def draw_table(image: np.ndarray, view: PinholeView, layout: SceneLayout) -> None:
    """The table top with a faint 10 cm grid and a strip of red tape along the cloth's near edge."""
    (x0, x1), (y0, y1) = layout.table_x_m, layout.table_y_m
    corners = np.array([[x0, y0, 0.0], [x1, y0, 0.0], [x1, y1, 0.0], [x0, y1, 0.0]])
    draw_polygon(image, view, view.to_camera(corners), TABLE_RGB)
    lines, radii, colors = _table_lines(layout)
    draw_segments(image, view, view.to_camera(lines), radii, colors)


def _quads(grid: int) -> np.ndarray:
    index = np.arange(grid * grid).reshape(grid, grid)
    return np.stack(
        [index[:-1, :-1].ravel(), index[:-1, 1:].ravel(), index[1:, 1:].ravel(), index[1:, :-1].ravel()],
        axis=1,
    )


def draw_cloth(image: np.ndarray, view: PinholeView, points: np.ndarray) -> None:
    """The cloth's grid as filled patches, far first; patches seen from below show the underside."""
    grid = points.shape[0]
    quads = _quads(grid)
    camera = view.to_camera(points.reshape(-1, 3))[quads]  # (quads, 4, 3)
    depth = camera[..., 2]
    pixels = view.to_pixels(camera)
    # Shoelace area in image coordinates (y down): negative when the top side faces the camera.
    x, y = pixels[..., 0].astype(np.float64), pixels[..., 1].astype(np.float64)
    area = (x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y).sum(axis=1)
    checker = (np.arange(len(quads)) // (grid - 1) + np.arange(len(quads)) % (grid - 1)) % 2
    in_front = (depth >= NEAR_M).all(axis=1)
    behind = (depth < NEAR_M).all(axis=1)
    # Both layers of a fold lie at table height: draw flipped patches as if a cloth's thickness
    # nearer, so the folded-over layer covers the one beneath.
    flipped = area > 0
    for q in np.argsort(-(depth.mean(axis=1) - _CLOTH_THICKNESS_M * flipped)).tolist():
        if behind[q]:
            continue
        color = CLOTH_UNDER_RGB if flipped[q] else CLOTH_TOP_RGB[checker[q]]
        if in_front[q]:
            cv2.fillConvexPoly(image, pixels[q], color, cv2.LINE_AA, SHIFT)
        else:
            draw_polygon(image, view, camera[q], color)


def draw_arm(image: np.ndarray, view: PinholeView, arm: ArmPose) -> None:
    """Links, servos and jaws of one arm, far parts first."""
    p = view.to_camera(np.concatenate([arm.points, arm.fixed_jaw, arm.moving_jaw]))
    segments = p[_ARM_SEGMENTS]  # (parts, 2, 3)
    order = np.argsort(-segments[..., 2].sum(axis=1)).tolist()
    draw_segments(image, view, segments[order], [_ARM_RADII[i] for i in order], [_ARM_COLORS[i] for i in order])


# Arm parts as index pairs into [points (7), fixed jaw (2), moving jaw (2)]; a pair of one index is
# a servo drawn as a disc.
_ARM_PARTS: tuple[tuple[int, int, float, Color], ...] = (
    (0, 1, SERVO_RADIUS_M * 1.3, SERVO_RGB),  # base and the pan servo
    (1, 2, LINK_RADIUS_M, PRINTED_RGB),  # shoulder
    (2, 3, LINK_RADIUS_M, PRINTED_RGB),  # upper arm
    (3, 4, LINK_RADIUS_M, PRINTED_RGB),  # forearm
    (4, 5, LINK_RADIUS_M, SERVO_RGB),  # wrist (the wrist_roll servo)
    (5, 7, LINK_RADIUS_M, PRINTED_RGB),  # gripper body, up to the fixed jaw's root
    (7, 8, JAW_RADIUS_M, PRINTED_RGB),  # fixed jaw
    (9, 10, JAW_RADIUS_M, PRINTED_RGB),  # moving jaw
    (2, 2, SERVO_RADIUS_M, SERVO_RGB),  # shoulder_lift servo
    (3, 3, SERVO_RADIUS_M, SERVO_RGB),  # elbow_flex servo
    (4, 4, SERVO_RADIUS_M, SERVO_RGB),  # wrist_flex servo
)
_ARM_SEGMENTS = np.array([(a, b) for a, b, _, _ in _ARM_PARTS])
_ARM_RADII = [radius for _, _, radius, _ in _ARM_PARTS]
_ARM_COLORS = [color for _, _, _, color in _ARM_PARTS]
