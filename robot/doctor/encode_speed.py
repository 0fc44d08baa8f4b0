"""The doctor's encode-speed row: can this machine encode every camera as fast as it records?

so101-record never drops frames silently, but when the encoder is slower than the cameras the
frame ring fills and frames are dropped (and counted on the quality card). That depends on the
codec, the camera sizes and the machine: three 480x640 AV1 streams need most of two cores.
This row finds out before a session does: it encodes two seconds of synthetic video per camera,
all cameras at once, with the options LeRobot's writer uses, once every encoder is warm (a first
frames' burst, before an encoder's threads and lookahead are running, is not what a long episode
sees), and reports the multiple of real time.
"""

import threading
import time
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from robot.doctor.rows import CheckRow, Status
from robot.lerobot_edge import codec_settings

PASS_SPEED = 1.5  # x real time: room for the control loop, capture and a busy machine
WARMUP_S = 0.5  # video fed to each encoder, untimed, before the clock starts
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


def encode_speed(
    shapes: Sequence[tuple[int, int]],
    fps: float,
    vcodec: str,
    seconds: float = 2.0,
    *,
    warmup_s: float = WARMUP_S,
    extra_s_per_frame: float = 0.0,
) -> float:
    """Multiple of real time at which `seconds` of every stream is encoded, all streams at once.

    Steady state, as a long episode encodes: each encoder is opened and fed `warmup_s` of frames
    first (its threads started, its lookahead filled), untimed; then every stream is timed from the
    moment all are warm until the last one has flushed. Each stream times itself, so the result does
    not depend on when the calling thread gets the CPU back. `extra_s_per_frame` slows every frame
    down (a slower machine, for tests).
    """
    import av

    config = codec_settings(vcodec)
    count = max(2, round(seconds * fps))
    warm = round(warmup_s * fps)
    errors: list[BaseException] = []
    spans: list[tuple[float, float]] = []
    warmed = threading.Barrier(len(shapes))

    def encode(height: int, width: int) -> None:
        try:
            frames = synthetic_frames(height, width)
            codec = av.CodecContext.create(vcodec, "w")
            codec.width, codec.height, codec.pix_fmt = width, height, config.pix_fmt
            codec.time_base = Fraction(1, round(fps))
            codec.framerate = Fraction(round(fps), 1)
            codec.options = dict(config.options)
            codec.open()

            def feed(index: int) -> None:
                frame = av.VideoFrame.from_ndarray(frames[index % len(frames)], format="rgb24")
                frame.pts = index
                codec.encode(frame.reformat(format=config.pix_fmt))
                if extra_s_per_frame:
                    time.sleep(extra_s_per_frame)

            for index in range(warm):
                feed(index)
        except BaseException as e:
            errors.append(e)
            warmed.abort()
            return
        try:
            warmed.wait()
            start = time.perf_counter()
            for index in range(warm, warm + count):
                feed(index)
            codec.encode(None)  # flush: every frame counts
            spans.append((start, time.perf_counter()))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=encode, args=shape, name="doctor-encode") for shape in shapes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:  # the first real one: the others were only woken from the barrier by it
        raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
    elapsed = max(end for _, end in spans) - min(begin for begin, _ in spans)
    return (count / fps) / elapsed


def check_encode_speed(
    shapes: Sequence[tuple[int, int]], fps: float, vcodec: str, *, extra_s_per_frame: float = 0.0
) -> CheckRow:
    """The row: PASS with headroom, WARN when it barely keeps up, FAIL when it cannot.

    `extra_s_per_frame` slows the encoder down (tests: a machine too slow to record).
    """
    subject, check = "video", f"{vcodec} speed"
    if not shapes:
        return CheckRow(subject, check, Status.PASS, "no cameras to encode")
    try:
        speed = encode_speed(shapes, fps, vcodec, extra_s_per_frame=extra_s_per_frame)
    except Exception as e:
        return CheckRow(subject, check, Status.FAIL, f"could not encode: {e}", "reinstall: make setup")
    return encode_verdict(speed, len(shapes), fps, vcodec)


def encode_verdict(speed: float, cameras: int, fps: float, vcodec: str) -> CheckRow:
    """What a measured speed means for a recording session.

    Below real time it fails: the frame ring (3 s) then fills within seconds of every episode, and
    the frames it drops are counted, marked for re-recording, and lost. Between real time and
    `PASS_SPEED` it warns. Another codec, or fewer or smaller cameras, fixes it; the row says which.
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
        Status.FAIL,
        detail + ": slower than the cameras, every episode longer than a few seconds drops frames",
        f"record with {other}, or use a machine with more cores",
    )
