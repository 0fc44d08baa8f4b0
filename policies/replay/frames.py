"""Decoding an episode's recorded camera frames in order, ahead of the loop that needs them.

    with EpisodeFrames(episode.videos, fps=30) as frames:   # a decoder thread starts
        images = frames.get(k)                              # {"overhead": uint8 (h, w, 3) RGB, ...}
    stills(video, [0, 40, 80], fps=30)                      # a few frames, for the report

Several episodes share one MP4 per camera (LeRobot v3.0): frame k of an episode is the frame
presented at `from_s + k / fps` in its file. Frames are decoded sequentially with PyAV (one seek
per episode), a little ahead of the control loop in a background thread (a bounded queue), so a
policy replay at 30 FPS does not decode on the control thread. A file that ends early, a frame of
the wrong size, or a decoding error becomes a `VideoError` naming the file and the frame.
"""

import queue
import threading
from collections.abc import Iterator, Sequence

import av
import numpy as np

from policies.replay.dataset import CameraVideo
from policies.replay.errors import VideoError

_AHEAD_FRAMES = 16  # how far the decoder thread may run ahead of the loop, frames
_GET_TIMEOUT_S = 30.0  # longest wait for one frame before the decoder is declared stuck, s
_FAR_AHEAD_S = 1.0  # a still this far past the decoder's position is reached by seeking, s


def _tolerance(fps: float) -> float:
    return 0.5 / fps


def _corrupt(video: CameraVideo, problem: str) -> VideoError:
    return VideoError(
        f"camera '{video.name}': {video.path}: {problem}. Next: restore the file from a copy of the dataset, or"
        " download the dataset again"
    )


def _rgb(frame: av.VideoFrame, video: CameraVideo, index: int) -> np.ndarray:
    image = frame.to_ndarray(format="rgb24")
    if image.shape != (video.height, video.width, 3):
        raise VideoError(
            f"camera '{video.name}': frame {index} of {video.path} is {image.shape[1]}x{image.shape[0]}, but the"
            f" dataset declares {video.width}x{video.height}. Next: fix meta/info.json or re-encode the video"
        )
    return image


def iter_frames(video: CameraVideo, length: int, fps: float) -> Iterator[np.ndarray]:
    """Frames 0..length-1 of one camera of an episode, in order (uint8 (h, w, 3) RGB).

    Raises:
        VideoError: the file cannot be decoded, or has no frame near one of the episode's times.
    """
    tolerance = _tolerance(fps)
    try:
        with av.open(str(video.path)) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            if video.from_s > tolerance:
                container.seek(int(max(0.0, video.from_s - tolerance) / stream.time_base), stream=stream)
            decoded = (f for f in container.decode(stream) if f.pts is not None)
            frame = next(decoded, None)
            for index in range(length):
                target = video.from_s + index / fps
                while frame is not None and frame.time < target - tolerance:
                    frame = next(decoded, None)
                if frame is None or abs(frame.time - target) > tolerance:
                    found = "the file ends" if frame is None else f"the next frame is at {frame.time:.3f} s"
                    raise _corrupt(
                        video, f"no frame {index} at {target:.3f} s ({found}); the video is shorter than its episode"
                    )
                yield _rgb(frame, video, index)
                frame = next(decoded, None)
    except av.error.FFmpegError as e:
        raise _corrupt(video, f"cannot decode it ({e})") from e


def stills(video: CameraVideo, indices: Sequence[int], fps: float) -> dict[int, np.ndarray]:
    """A few frames of one camera of an episode, by episode frame index.

    Raises:
        VideoError: as `iter_frames`.
    """
    tolerance = _tolerance(fps)
    found: dict[int, np.ndarray] = {}
    try:
        with av.open(str(video.path)) as container:
            stream = container.streams.video[0]
            decoded: Iterator[av.VideoFrame] | None = None
            frame = None
            for index in sorted(set(indices)):
                target = video.from_s + index / fps
                if decoded is None or frame is None or target - frame.time > _FAR_AHEAD_S or frame.time > target:
                    container.seek(int(max(0.0, target - 2 * tolerance) / stream.time_base), stream=stream)
                    decoded = (f for f in container.decode(stream) if f.pts is not None)
                    frame = next(decoded, None)
                while frame is not None and frame.time < target - tolerance:
                    frame = next(decoded, None)
                if frame is None or abs(frame.time - target) > tolerance:
                    raise _corrupt(video, f"no frame {index} at {target:.3f} s; the video is shorter than its episode")
                found[index] = _rgb(frame, video, index)
    except av.error.FFmpegError as e:
        raise _corrupt(video, f"cannot decode it ({e})") from e
    return found


class EpisodeFrames:
    """Every camera's frames of one episode, decoded in a background thread, handed out in order."""

    def __init__(self, videos: Sequence[CameraVideo], length: int, fps: float) -> None:
        self.videos = tuple(videos)
        self.length = length
        self.fps = fps
        self._queue: queue.Queue[tuple[int, dict[str, np.ndarray]] | BaseException] = queue.Queue(_AHEAD_FRAMES)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._decode, name="replay-decoder", daemon=True)
        self._next = 0

    def __enter__(self) -> "EpisodeFrames":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _put(self, item: tuple[int, dict[str, np.ndarray]] | BaseException) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _decode(self) -> None:
        try:
            streams = [iter_frames(video, self.length, self.fps) for video in self.videos]
            for index in range(self.length):
                images = {video.name: next(stream) for video, stream in zip(self.videos, streams, strict=True)}
                if not self._put((index, images)):
                    return
        except BaseException as e:  # handed to the loop's thread, which raises it
            self._put(e)

    def get(self, index: int) -> dict[str, np.ndarray]:
        """The images of frame `index` (frames must be asked for in order: 0, 1, 2, ...).

        Raises:
            VideoError: a decoding problem, or the decoder produced nothing for a long time.
        """
        if index != self._next:
            raise ValueError(f"frames are handed out in order: expected frame {self._next}, asked for {index}")
        try:
            item = self._queue.get(timeout=_GET_TIMEOUT_S)
        except queue.Empty:
            raise VideoError(f"no decoded frame {index} within {_GET_TIMEOUT_S:.0f} s; the decoder is stuck") from None
        if isinstance(item, BaseException):
            raise item
        self._next += 1
        return item[1]

    def close(self) -> None:
        """Stop the decoder thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
