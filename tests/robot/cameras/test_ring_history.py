"""How many frames a camera keeps: enough for the sync reader to pick what a full history would, no more.

Each kept frame is a whole image (0.9 MB at 640x480), so the ring is sized by time at the camera's
rate. The check is against the selection functions themselves: for cameras at random phases with
jitter, a read made after the tick (by up to the reader's wait, plus a late tick) picks the same
frames from the default ring as from every frame ever captured.
"""

import numpy as np
import pytest

from robot.cameras.config import MIN_RING_FRAMES, CaptureConfig
from robot.cameras.frame import Frame
from robot.cameras.selection import select_min_skew, select_nearest
from robot.cameras.sync import SyncConfig

LATE_TICK_S = 0.04  # a tick whose read starts this late, on top of the reader's longest wait
IMAGE = np.zeros((2, 2, 3), np.uint8)


def test_ring_is_sized_by_history_at_the_camera_rate() -> None:
    capture = CaptureConfig()
    assert capture.ring_frames(30) == 5  # 0.15 s at 30 fps
    assert capture.ring_frames(60) == 9
    assert capture.ring_frames(5) == MIN_RING_FRAMES  # a slow camera still keeps the frames around a tick
    assert CaptureConfig(history_s=0.5).ring_frames(30) == 15
    assert CaptureConfig(ring_size=16).ring_frames(60) == 16  # an explicit size wins


def _captures(fps: float, phase_s: float, jitter_s: float, rng: np.random.Generator, n: int) -> list[float]:
    return [phase_s + k / fps + rng.uniform(-jitter_s, jitter_s) for k in range(n)]


@pytest.mark.parametrize("fps", [30.0, 60.0])
def test_default_ring_picks_what_a_full_history_picks(fps: float) -> None:
    rng = np.random.default_rng(7)
    size = CaptureConfig().ring_frames(fps)
    window_s = 1 / fps  # the reader's min_skew window: one period of the slowest camera
    latest_read_s = SyncConfig().max_wait_s + LATE_TICK_S
    checked = 0
    for _ in range(40):
        history = {
            name: [
                Frame(name, IMAGE, time_s, k)
                for k, time_s in enumerate(_captures(fps, rng.uniform(0, 1 / fps), 0.002, rng, 200))
            ]
            for name in ("left_wrist", "right_wrist", "overhead")
        }
        tick_s = rng.uniform(1.0, 2.0)
        read_s = tick_s + rng.uniform(0, latest_read_s)
        full = {name: [f for f in frames if f.capture_time_s <= read_s] for name, frames in history.items()}
        ring = {name: frames[-size:] for name, frames in full.items()}
        assert select_nearest(ring, tick_s) == select_nearest(full, tick_s)
        assert select_min_skew(ring, tick_s, window_s) == select_min_skew(full, tick_s, window_s)
        checked += 1
    assert checked == 40


def test_a_much_later_read_finds_only_newer_frames() -> None:
    # The contrast that shows the test above can fail: a read 0.3 s after its tick has lost the
    # frames near the tick from a 30 fps camera's 5-frame ring and can only offer its oldest.
    fps, size = 30.0, CaptureConfig().ring_frames(30.0)
    frames = [Frame("overhead", IMAGE, k / fps, k) for k in range(100)]
    tick_s = 2.0
    kept = [f for f in frames if f.capture_time_s <= tick_s + 0.3][-size:]
    assert select_nearest({"overhead": kept}, tick_s)["overhead"].sequence != 60
    assert select_nearest({"overhead": frames}, tick_s)["overhead"].sequence == 60
