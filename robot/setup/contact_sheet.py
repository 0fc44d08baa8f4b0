"""One picture from each camera on one sheet, each tile numbered and labelled, so a person can say which is which.

    snapshots = take_snapshots(cameras)            # a frame from each (or why there is none)
    write_contact_sheet(Path("/tmp/so101-cameras.png"), snapshots)

    +-----------------+ +-----------------+ +-----------------+
    | [0]             | | [1]             | | [2]             |
    |   (its frame)   | |   (its frame)   | |   no picture:   |
    |                 | |                 | |   (why)         |
    +-----------------+ +-----------------+ +-----------------+
    /dev/video0 C920    /dev/video2 C920    /dev/video4 ...
    by-path: ...        by-path: ...        by-path: ...
    by-id: ...          by-id: (shared)     by-id: ...

Real cameras are opened with the product's own OpenCV source (the mode the rig would ask for when
they offer it) and a few frames are skipped while auto exposure settles; virtual cameras render one
frame of the virtual rig's scene.
"""

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from robot.cameras.config import CaptureConfig, OpenCVCameraConfig
from robot.cameras.errors import CameraError
from robot.cameras.factory import make_cameras
from robot.cameras.opencv_camera import OpenCapture, OpenCVFrameSource, open_cv2_capture
from robot.cameras.virtual.joint_sources import constant_source
from robot.errors import RobotError
from robot.setup.camera_modes import CameraMode, choose_mode, modes_summary
from robot.setup.cameras import FoundCamera
from robot.setup.sysfs import under_root

SNAPSHOT_MODE = CameraMode("MJPG", 640, 480, 30.0)  # what a rig asks for: if the camera has it, the picture is that
SETTLE_FRAMES = 10  # auto exposure needs a third of a second after opening: the first frames are dark
TILE_WIDTH = 480  # pixels
TILE_HEIGHT = 360
_MARGIN = 8  # pixels between tiles and around the sheet
_COLUMNS = 3
_FONT = cv2.FONT_HERSHEY_SIMPLEX
_TEXT_SCALE = 0.45
_LINE_HEIGHT = 18  # pixels, for _TEXT_SCALE
_BACKGROUND = (24, 24, 24)  # RGB
_NO_PICTURE = (90, 20, 20)


class ContactSheetError(RobotError):
    """The contact sheet could not be written."""


@dataclass(frozen=True, eq=False)
class Snapshot:
    """One camera's picture, or why there is none."""

    camera: FoundCamera
    image: np.ndarray | None  # RGB uint8, height x width x 3
    problem: str = ""  # set when image is None: what went wrong, in a few words


def take_snapshots(
    cameras: Sequence[FoundCamera], root: Path = Path("/"), open_capture: OpenCapture = open_cv2_capture
) -> list[Snapshot]:
    """A snapshot of each camera, in order; virtual ones together (they share one scene)."""
    virtual = [camera for camera in cameras if camera.virtual is not None]
    rendered = {snapshot.camera.number: snapshot for snapshot in _virtual_snapshots(virtual)}
    return [rendered.get(c.number) or _real_snapshot(c, root, open_capture) for c in cameras]


def tile_lines(camera: FoundCamera) -> list[str]:
    """The label under a camera's tile (and its row in the command's table)."""
    if camera.virtual is not None:
        config = camera.virtual
        return [
            f"{camera.device}  {camera.card}",
            f"rig file entry: {config.name}, {config.width}x{config.height}@{config.fps:g}",
        ]
    shared = camera.shares_by_id_with
    by_id = camera.by_id[0] if camera.by_id else "none"
    if shared:
        by_id += f"  (shared with camera {', '.join(str(n) for n in shared)})"
    return [
        f"{camera.device}  {camera.card}",
        f"by-path: {camera.by_path[0] if camera.by_path else 'none'}",
        f"by-id: {by_id}",
        f"modes: {modes_summary(camera.modes)}",
        f"rig file: {camera.stable_device}",
    ]


def compose_contact_sheet(snapshots: Sequence[Snapshot]) -> np.ndarray:
    """The sheet as an RGB image: a grid of numbered tiles, each with its label below."""
    if not snapshots:
        raise ContactSheetError("no cameras to put on a contact sheet. Next: plug the cameras in, then retry")
    labels = [_wrapped(tile_lines(s.camera), TILE_WIDTH - 2 * _MARGIN) for s in snapshots]
    band = _MARGIN + _LINE_HEIGHT * max(len(lines) for lines in labels)
    columns = min(_COLUMNS, len(snapshots))
    rows = math.ceil(len(snapshots) / columns)
    cell_w, cell_h = TILE_WIDTH + _MARGIN, TILE_HEIGHT + band + _MARGIN
    sheet = np.full((rows * cell_h + _MARGIN, columns * cell_w + _MARGIN, 3), _BACKGROUND, np.uint8)
    for i, (snapshot, lines) in enumerate(zip(snapshots, labels, strict=True)):
        x, y = _MARGIN + (i % columns) * cell_w, _MARGIN + (i // columns) * cell_h
        sheet[y : y + TILE_HEIGHT, x : x + TILE_WIDTH] = _tile_image(snapshot)
        _badge(sheet, x, y, str(snapshot.camera.number))
        for j, line in enumerate(lines):
            baseline = y + TILE_HEIGHT + _LINE_HEIGHT * (j + 1)
            cv2.putText(sheet, line, (x, baseline), _FONT, _TEXT_SCALE, (230, 230, 230), 1, cv2.LINE_AA)
    return sheet


def write_contact_sheet(path: Path, snapshots: Sequence[Snapshot]) -> None:
    """Compose the sheet and write it as a PNG at `path` (its folder is made if missing).

    Raises:
        ContactSheetError: no snapshots, or the file cannot be written.
    """
    sheet = compose_contact_sheet(snapshots)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        ok, encoded = cv2.imencode(".png", cv2.cvtColor(sheet, cv2.COLOR_RGB2BGR))
        if not ok:
            raise OSError("the PNG encoder failed")
        path.write_bytes(encoded.tobytes())
    except OSError as e:
        raise ContactSheetError(
            f"cannot write the contact sheet {path}: {getattr(e, 'strerror', None) or e}. "
            "Next: give another file with --contact_sheet=/tmp/cameras.png"
        ) from None


def tile_area(snapshot: Snapshot) -> tuple[slice, slice]:
    """Where inside its tile the snapshot's picture is drawn (rows, columns): letterboxed, centred."""
    if snapshot.image is None:
        return slice(0, TILE_HEIGHT), slice(0, TILE_WIDTH)
    height, width = snapshot.image.shape[:2]
    scale = min(TILE_WIDTH / width, TILE_HEIGHT / height)
    w, h = max(1, round(width * scale)), max(1, round(height * scale))
    top, left = (TILE_HEIGHT - h) // 2, (TILE_WIDTH - w) // 2
    return slice(top, top + h), slice(left, left + w)


def _tile_image(snapshot: Snapshot) -> np.ndarray:
    tile = np.full((TILE_HEIGHT, TILE_WIDTH, 3), _BACKGROUND if snapshot.image is not None else _NO_PICTURE, np.uint8)
    if snapshot.image is None:
        lines = _wrapped([f"no picture: {snapshot.problem}"], TILE_WIDTH - 4 * _MARGIN)
        for j, line in enumerate(lines):
            cv2.putText(tile, line, (2 * _MARGIN, 90 + _LINE_HEIGHT * j), _FONT, _TEXT_SCALE, (255, 255, 255), 1)
        return tile
    rows, columns = tile_area(snapshot)
    size = (columns.stop - columns.start, rows.stop - rows.start)
    tile[rows, columns] = cv2.resize(snapshot.image, size, interpolation=cv2.INTER_AREA)
    return tile


def _badge(sheet: np.ndarray, x: int, y: int, text: str) -> None:
    """The camera's number, large, in a box at the tile's top left corner."""
    (w, h), _ = cv2.getTextSize(text, _FONT, 1.6, 3)
    cv2.rectangle(sheet, (x, y), (x + w + 20, y + h + 20), (0, 0, 0), cv2.FILLED)
    cv2.putText(sheet, text, (x + 10, y + h + 10), _FONT, 1.6, (255, 220, 0), 3, cv2.LINE_AA)


def _wrapped(lines: Sequence[str], width_px: int) -> list[str]:
    """`lines` broken so each fits `width_px` at the label font (Hershey fonts draw ASCII only)."""
    out = []
    for line in lines:
        rest = line.encode("ascii", "replace").decode()
        while rest:
            cut = len(rest)
            while cut > 1 and cv2.getTextSize(rest[:cut], _FONT, _TEXT_SCALE, 1)[0][0] > width_px:
                cut -= 1
            out.append(rest[:cut])
            rest = rest[cut:]
    return out


def _real_snapshot(camera: FoundCamera, root: Path, open_capture: OpenCapture) -> Snapshot:
    mode = choose_mode(camera.modes, SNAPSHOT_MODE) or min(camera.modes, key=lambda m: (m.fourcc != "MJPG", m.width))
    try:
        config = OpenCVCameraConfig(
            name=f"camera {camera.number}",
            device=str(under_root(root, camera.device)),
            width=mode.width,
            height=mode.height,
            fps=mode.fps,
            fourcc=mode.fourcc if len(mode.fourcc) == 4 else "",
            capture=CaptureConfig(),
        )
        source = OpenCVFrameSource(config, open_capture)
    except CameraError as e:
        return Snapshot(camera, None, e.problem)
    try:
        source.open()
        frame = source.read()
        for _ in range(SETTLE_FRAMES - 1):
            frame = source.read()
        return Snapshot(camera, np.array(frame.image))
    except (CameraError, cv2.error) as e:
        return Snapshot(camera, None, getattr(e, "problem", None) or str(e))
    finally:
        source.close()


def _virtual_snapshots(cameras: Sequence[FoundCamera]) -> list[Snapshot]:
    """One rendered frame of each virtual camera, the arms in a fixed pose."""
    configs = {camera.number: camera.virtual for camera in cameras if camera.virtual is not None}
    if not configs:
        return []
    made = make_cameras(list(configs.values()), joint_source=constant_source())
    snapshots = []
    with contextlib.ExitStack() as stack:
        for camera in cameras:
            live = made[configs[camera.number].name]  # type: ignore[union-attr]
            try:
                stack.enter_context(live)
                snapshots.append(Snapshot(camera, np.array(live.latest().image)))
            except CameraError as e:
                snapshots.append(Snapshot(camera, None, e.problem))
    return snapshots
