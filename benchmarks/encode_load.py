"""The encode load for the rig-loop benchmark: three synthetic 480x640 AV1 streams at 30 fps in a child process.

The child runs at normal priority; as root it runs without CAP_SYS_NICE, since SVT-AV1 otherwise makes
its workers SCHED_FIFO 99 (see ../shared/notes/anchors-measured.md).

    .venv/bin/python -m benchmarks.encode_load WORK_DIR   # the child; stops when its stdin closes
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

FPS = 30.0
PERIOD_S = 1.0 / FPS
ENCODE_WIDTH, ENCODE_HEIGHT, ENCODE_STREAMS = 640, 480, 3
ENCODE_OPTIONS = {"preset": "12", "crf": "30", "g": "2"}  # LeRobot's VideoEncoderConfig defaults
CAP_SYS_NICE, PR_CAPBSET_DROP = 23, 24


def sys_nice_dropper() -> Callable[[], None]:
    """A preexec_fn that drops CAP_SYS_NICE from the bounding set (libc is loaded here, before fork)."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def drop() -> None:
        if prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_SYS_NICE) failed")

    return drop


@contextlib.contextmanager
def encoder_process(work_dir: Path) -> Iterator[dict[str, Any]]:
    """The encode load in a child process at normal priority; yields a dict filled in at the end."""
    command = [sys.executable, "-m", "benchmarks.encode_load", str(work_dir)]
    info: dict[str, Any] = {"euid": os.geteuid()}
    preexec: Callable[[], None] | None = None
    if os.geteuid() == 0 and shutil.which("setpriv"):
        command = ["setpriv", "--bounding-set=-sys_nice", "--inh-caps=-sys_nice", "--", *command]
        info["sys_nice_dropped_by"] = "setpriv --bounding-set=-sys_nice --inh-caps=-sys_nice"
    elif os.geteuid() == 0:
        preexec = sys_nice_dropper()
        info["sys_nice_dropped_by"] = "prctl(PR_CAPBSET_DROP, CAP_SYS_NICE) before exec"
    repo = Path(__file__).resolve().parents[1]
    with open(work_dir / "encoder.stderr", "wb") as stderr:
        child = subprocess.Popen(
            command, cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, preexec_fn=preexec
        )
    info["pid"] = child.pid
    time.sleep(0.5)
    if child.poll() is not None:
        tail = (work_dir / "encoder.stderr").read_text(errors="replace")[-1500:]
        raise RuntimeError(f"the encoder child exited at once (rc {child.returncode}): {tail}")
    try:
        yield info
    finally:
        try:
            out, _ = child.communicate(timeout=20)  # closes its stdin: the child stops at end of input
            info |= json.loads(out.decode().strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
            child.kill()
            child.wait()
            tail = (work_dir / "encoder.stderr").read_text(errors="replace")[-1500:]
            info["error"] = f"the encoder child ended without a report (rc {child.returncode}): {tail}"


def encode_load(work_dir: Path) -> None:
    """Child: encode three synthetic 480x640 streams at 30 fps until stdin closes; print a JSON line."""
    import av

    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:ENCODE_HEIGHT, 0:ENCODE_WIDTH]
    base = np.stack([x * 255 // ENCODE_WIDTH, y * 255 // ENCODE_HEIGHT, (x + y) * 255 // 1120], axis=-1)
    noisy = [  # per stream, 8 frames of gradient +-12 noise, cycled; a moving block on top
        [np.clip(base + rng.integers(-12, 13, base.shape), 0, 255).astype(np.uint8) for _ in range(8)]
        for _ in range(ENCODE_STREAMS)
    ]
    outputs = []
    for index in range(ENCODE_STREAMS):
        container = av.open(str(work_dir / f"stream{index}.mp4"), "w")
        stream = container.add_stream("libsvtav1", rate=int(FPS), options=dict(ENCODE_OPTIONS))
        stream.width, stream.height, stream.pix_fmt = ENCODE_WIDTH, ENCODE_HEIGHT, "yuv420p"
        outputs.append((container, stream))
    cpu_start, started = time.process_time(), time.monotonic()
    anchor, k, frames, reanchors = started, 0, 0, 0
    done_s: list[float] = []  # when each frame (all streams) was encoded: the parent's window fps
    while not stop.is_set():
        deadline = anchor + k * PERIOD_S
        now = time.monotonic()
        if now < deadline:
            time.sleep(deadline - now)
        elif now > deadline + PERIOD_S:  # fell behind a whole frame: re-anchor, no burst
            anchor, k, reanchors = now, 0, reanchors + 1
        for index, (container, stream) in enumerate(outputs):
            image = noisy[index][frames % 8].copy()
            top, left = (frames * 3) % (ENCODE_HEIGHT - 64), (frames * 5) % (ENCODE_WIDTH - 64)
            image[top : top + 64, left : left + 64] = 255 - 60 * index
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = frames
            container.mux(stream.encode(frame))
        frames, k = frames + 1, k + 1
        done_s.append(round(time.monotonic(), 4))
    elapsed_s, cpu_s = time.monotonic() - started, time.process_time() - cpu_start
    for container, stream in outputs:
        container.mux(stream.encode(None))
        container.close()
    report = {"frames_per_stream": frames, "seconds": elapsed_s, "fps": frames / elapsed_s, "reanchors": reanchors}
    report |= {"cpu_cores": cpu_s / elapsed_s, "frame_done_s": done_s}
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m benchmarks.encode_load WORK_DIR")
    encode_load(Path(sys.argv[1]))
