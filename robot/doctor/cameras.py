"""The doctor's camera rows: does each camera deliver its rate, and do they stay in step?

Each camera is opened, run for a few seconds next to a 30 Hz tick, and judged on the frames it
actually delivered (capture timestamps, not what the driver claims).
"""

import contextlib
import time

from robot.cameras.config import CameraConfig
from robot.cameras.errors import CameraError
from robot.cameras.factory import make_cameras
from robot.cameras.frame import Frame, achieved_fps
from robot.cameras.sync import SyncConfig, SyncReader
from robot.cameras.virtual.joint_sources import constant_source
from robot.doctor.rows import CheckRow, Status

MEASURE_S = 2.0
FPS_WARN_FRACTION = 0.9  # below 90 % of the requested rate: warn (USB bandwidth? YUYV?)
FPS_FAIL_FRACTION = 0.75


def check_cameras(configs: tuple[CameraConfig, ...], sync: SyncConfig, measure_s: float = MEASURE_S) -> list[CheckRow]:
    """One row per camera (achieved rate) and one for their synchronisation."""
    if not configs:
        return [CheckRow("cameras", "configured", Status.WARN, "no cameras in the rig file", "add cameras: to record")]
    # Virtual cameras render a fixed pose here: the doctor does not move the arms.
    cameras = make_cameras(configs, joint_source=constant_source())
    rows: list[CheckRow] = []
    with contextlib.ExitStack() as stack:
        connected = []
        for name, camera in cameras.items():
            try:
                camera.connect()
            except CameraError as e:
                rows.append(CheckRow(name, "camera", Status.FAIL, e.problem, e.next_step))
                continue
            stack.callback(camera.disconnect)
            connected.append(camera)
        if not connected:
            return rows
        reader = SyncReader(connected, sync)
        failed: dict[str, CameraError] = {}
        period = 1.0 / max(c.fps for c in connected)
        start = time.monotonic()
        end = start + measure_s
        next_tick = start
        # Every frame delivered during the measurement, gathered from each ring at every tick: a ring
        # holds only ~0.15 s, and a rate from its last few frames read one stall as 12 fps of 30.
        delivered: dict[str, dict[int, Frame]] = {camera.name: {} for camera in connected}
        while time.monotonic() < end and not failed:
            time.sleep(max(0.0, next_tick - time.monotonic()))
            try:
                reader.read(next_tick)
                for camera in connected:
                    delivered[camera.name].update(
                        (frame.sequence, frame) for frame in camera.frames() if frame.capture_time_s >= start
                    )
            except CameraError as e:
                failed[e.camera] = e
            next_tick += period
        for camera in connected:
            if camera.name in failed:
                error = failed[camera.name]
                rows.append(CheckRow(camera.name, "camera", Status.FAIL, error.problem, error.next_step))
                continue
            fps = achieved_fps([delivered[camera.name][n] for n in sorted(delivered[camera.name])])
            detail = f"{fps:.1f} fps of {camera.fps:.0f} requested, {camera.width}x{camera.height}"
            if fps < camera.fps * FPS_FAIL_FRACTION:
                rows.append(
                    CheckRow(
                        camera.name, "camera", Status.FAIL, detail, "use MJPG, a USB 3 port or fewer cameras per hub"
                    )
                )
            elif fps < camera.fps * FPS_WARN_FRACTION:
                rows.append(CheckRow(camera.name, "camera", Status.WARN, detail, "use MJPG or another USB port"))
            else:
                rows.append(CheckRow(camera.name, "camera", Status.PASS, detail))
        if not failed and len(connected) > 1:
            stats = reader.stats()
            detail = (
                f"skew p50 {stats.skew_p50_s * 1000:.1f} ms, p99 {stats.skew_p99_s * 1000:.1f} ms"
                f" over {stats.ticks} ticks;"
                f" dropped {sum(stats.dropped.values())}, duplicated {sum(stats.duplicated.values())}"
            )
            ok = stats.skew_p99_s <= period
            rows.append(
                CheckRow(
                    "cameras",
                    "sync",
                    Status.PASS if ok else Status.WARN,
                    detail,
                    "" if ok else "cameras drift apart: check their fps and USB load",
                )
            )
    return rows
