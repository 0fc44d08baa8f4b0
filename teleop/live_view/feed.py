"""The loop's side of the live view: each step handed over by one reference, nothing copied or encoded.

    loop thread:    on_step(step) -> feed.latest = step          (one assignment: the loop never waits)
    render thread:  every 1/refresh_fps s: take feed.latest -> JPEG per camera + a point per joint trace

The render thread runs at normal priority (never real-time): when the machine is busy, the view
refreshes less often and the loop keeps its deadlines.
"""

import threading
import time
from collections import deque
from dataclasses import dataclass, field

import cv2
import numpy as np

from robot.control_loop import Step
from robot.joints import JOINT_NAMES, Side

JPEG_QUALITY = 70


class LiveFeed:
    """A step hook that keeps the latest step, for the render thread to take."""

    def __init__(self) -> None:
        self.latest: Step | None = None

    def on_step(self, step: Step) -> None:
        """Keep a reference to this step (a plain assignment is atomic under the GIL: no lock)."""
        self.latest = step


@dataclass
class Picture:
    """What the page shows, rendered from one step: one JPEG per camera, and the joint traces."""

    jpegs: dict[str, bytes] = field(default_factory=dict)
    # trace name ("left_follower.elbow_flex", "left_leader.elbow_flex") -> [(t_s, degrees)]
    traces: dict[str, deque[tuple[float, float]]] = field(default_factory=dict)
    t0_s: float = 0.0
    renders: int = 0


def _jpeg(image: np.ndarray) -> bytes:
    ok, data = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    return data.tobytes() if ok else b""


class Renderer:
    """Turns the feed's latest step into a `Picture`, on its own thread, at `refresh_fps`."""

    def __init__(self, feed: LiveFeed, refresh_fps: float, history_s: float) -> None:
        self.feed = feed
        self.period_s = 1.0 / refresh_fps
        self.points = max(2, round(history_s * refresh_fps))
        self.picture = Picture(t0_s=time.monotonic())
        self.lock = threading.Lock()  # between this thread and the HTTP handlers, never the loop
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="live-view-render", daemon=True)
        self._rendered: Step | None = None

    def start(self) -> None:
        """Start rendering."""
        self._thread.start()

    def stop(self) -> None:
        """Stop rendering (returns once the thread has ended)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self.render_once()

    def render_once(self) -> bool:
        """Render the latest step if it is new; returns whether it was."""
        step = self.feed.latest
        if step is None or step is self._rendered:
            return False
        self._rendered = step
        observation = step.observation
        jpegs = {}
        if observation.frames is not None:
            jpegs = {name: _jpeg(frame.image) for name, frame in observation.frames.frames.items()}
        with self.lock:
            picture = self.picture
            picture.jpegs.update(jpegs)
            t = observation.t_s - picture.t0_s
            for role, readings in (("follower", observation.followers), ("leader", observation.leaders)):
                for side in Side:
                    if side not in readings:
                        continue
                    for joint in JOINT_NAMES:
                        name = f"{side}_{role}.{joint}"
                        trace = picture.traces.setdefault(name, deque(maxlen=self.points))
                        trace.append((round(t, 3), round(float(readings[side].positions[joint]), 2)))
            picture.renders += 1
        return True

    def snapshot(self) -> tuple[dict[str, bytes], dict[str, list[tuple[float, float]]], int]:
        """(jpegs, traces, renders) as of now, copied out under the lock."""
        with self.lock:
            picture = self.picture
            return dict(picture.jpegs), {k: list(v) for k, v in picture.traces.items()}, picture.renders
