"""The doctor's encode-speed row: can this machine encode every camera as fast as it records?

so101-record never drops frames silently, but when the encoder is slower than the cameras the
frame ring fills and frames are dropped (and counted on the quality card). That depends on the
codec, the camera sizes and the machine: three 480x640 AV1 streams need most of two cores.
This row finds out before a session does: it encodes a second of synthetic video per camera,
all cameras at once, with the options LeRobot's writer uses, and reports the multiple of real time.
"""

import contextlib
import threading
import time
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from robot.doctor.rows import CheckRow, Status
from robot.lerobot_edge import codec_settings

PASS_SPEED = 1.5  # x real time: room for the control loop, capture and a busy machine
_DISTINCT_FRAMES = 8  # synthetic frames cycled through (a gradient that moves, with sensor noise)


def synthetic_frames(height: int, width: int, count: int = _DISTINCT_FRAMES) -> list[np.ndarray]:
    """Camera-like frames: smooth content that moves, plus a little noise (pure noise would be unfair)."""
    rng = np.random.default_rng(0)
    ys, xs = np.mgrid[0:height, 0:width]
    noise = rng.integers(-8, 8, (height, width, 3), dtype=np.int16)
    frames = []
    for index in range(count):
        base = np.stack([(xs + 9 * index) % 256, (ys + 4 * index) % 256, (xs + ys) // 4 % 256], axis=-1)
        frames.append(np.clip(base + noise, 0, 255).astype(np.uint8))
    return frames


def encode_speed(shapes: Sequence[tuple[int, int]], fps: float, vcodec: str, seconds: float = 2.0) -> float:
    """Multiple of real time at which `seconds` of every stream is encoded, all streams at once.

    The clock starts once every encoder is open (opening is paid once per episode, not per frame)
    and stops when the last one has flushed its lookahead.
    """
    import av

    config = codec_settings(vcodec)
    count = max(2, round(seconds * fps))
    errors: list[BaseException] = []
    opened = threading.Barrier(len(shapes) + 1)

    def encode(height: int, width: int) -> None:
        try:
            frames = synthetic_frames(height, width)
            codec = av.CodecContext.create(vcodec, "w")
            codec.width, codec.height, codec.pix_fmt = width, height, config.pix_fmt
            codec.time_base = Fraction(1, round(fps))
            codec.framerate = Fraction(round(fps), 1)
            codec.options = dict(config.options)
            codec.open()
        except BaseException as e:
            errors.append(e)
            opened.abort()
            return
        try:
            opened.wait()
            for index in range(count):
                frame = av.VideoFrame.from_ndarray(frames[index % len(frames)], format="rgb24")
                frame.pts = index
                codec.encode(frame.reformat(format=config.pix_fmt))
            codec.encode(None)  # flush: every frame counts
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=encode, args=shape, name="doctor-encode") for shape in shapes]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):  # an encoder failed to open: reported below
        opened.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return (count / fps) / elapsed


def check_encode_speed(shapes: Sequence[tuple[int, int]], fps: float, vcodec: str) -> CheckRow:
    """The row: PASS with headroom, WARN when it barely keeps up, FAIL when it cannot."""
    subject, check = "video", f"{vcodec} speed"
    if not shapes:
        return CheckRow(subject, check, Status.PASS, "no cameras to encode")
    try:
        speed = encode_speed(shapes, fps, vcodec)
    except Exception as e:
        return CheckRow(subject, check, Status.FAIL, f"could not encode: {e}", "reinstall: make setup")
    return encode_verdict(speed, len(shapes), fps, vcodec)


def encode_verdict(speed: float, cameras: int, fps: float, vcodec: str) -> CheckRow:
    """What a measured speed means for a recording session.

    Never a failure: a slow encoder costs frames that the session counts and reports (the
    episode is marked for re-recording), and another codec fixes it; the row says which.
    """
    subject, check = "video", f"{vcodec} speed"
    detail = f"{speed:.2f}x real time for {cameras} camera(s) at {fps:g} fps"
    other = "--dataset.vcodec=h264 (several times less CPU)" if vcodec != "h264" else "smaller or fewer cameras"
    if speed >= PASS_SPEED:
        return CheckRow(subject, check, Status.PASS, detail)
    if speed >= 1.0:
        return CheckRow(
            subject,
            check,
            Status.WARN,
            detail + ": little headroom, frames may be dropped while the machine is busy",
            f"record with {other}, or close other programs",
        )
    return CheckRow(
        subject,
        check,
        Status.WARN,
        detail + ": slower than the cameras, long episodes will drop frames",
        f"record with {other}, or use a machine with more cores",
    )
