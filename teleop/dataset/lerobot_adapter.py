"""Everything that touches LeRobot's dataset writer, in one place (pinned to lerobot 0.6.1).

We write through `LeRobotDataset` so the files are LeRobot's own, with two changes:

- Its streaming encoder drops a frame when a camera's queue stays full for 0.1 s and only logs
  it. Ours waits instead (backpressure): the writer process then falls behind, which the frame
  ring in front of it absorbs and counts, so no frame is ever lost silently.
- A dataset object whose save failed is disarmed (`abandon`), so that garbage collection cannot
  run LeRobot's `finalize()` and write files after our rollback.

The private attributes used here (`_frame_queues`, `_threads`, `_result_queues`, `_episode_active`,
`writer`, `_pq_writer`, `_metadata_buffer`, `_finalized`) are those of lerobot 0.6.1; the tests in
tests/teleop/dataset exercise every one of them, so an upgrade that renames them fails loudly.
"""

import contextlib
import logging
import queue
from pathlib import Path

import av
import numpy as np
from lerobot.configs import RGBEncoderConfig
from lerobot.datasets.lerobot_dataset import LeRobotDataset
from lerobot.datasets.video_utils import StreamingVideoEncoder

from teleop.dataset.errors import EncoderError
from teleop.dataset.faults import fault_point
from teleop.dataset.features import INTERVENTION_KEY, dataset_features
from teleop.dataset.spec import WriterSpec
from teleop.dataset.vocabulary import ACTION_KEY, STATE_KEY, camera_key

logger = logging.getLogger(__name__)

_PUT_WAIT_S = 0.25  # how long one wait for queue space lasts before the encoder's health is checked again


class BlockingStreamingEncoder(StreamingVideoEncoder):
    """LeRobot's per-camera streaming encoder, but a full queue blocks the caller instead of dropping."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.waits = 0  # times a frame had to wait for queue space (the encoder was behind)

    def feed_frame(self, video_key: str, image: np.ndarray) -> None:
        """Queue one frame for a camera's encoder thread, waiting for space as long as it is alive.

        Raises:
            EncoderError: the camera's encoder thread died (its error message included).
        """
        if not self._episode_active:
            raise EncoderError("no episode is being encoded. Next: this is a bug; please report it")
        if fault_point("encoder:feed"):
            return  # a test's lost frame: the video comes out one frame short
        frame = image.copy()  # the caller's buffer (shared memory) is reused for later frames
        frames, thread = self._frame_queues[video_key], self._threads[video_key]
        while True:
            if not thread.is_alive():
                raise EncoderError(f"the video encoder for {video_key} stopped: {self._thread_error(video_key)}")
            try:
                frames.put(frame, timeout=_PUT_WAIT_S)
                return
            except queue.Full:
                self.waits += 1

    def _thread_error(self, video_key: str) -> str:
        try:
            status, message = self._result_queues[video_key].get_nowait()
        except queue.Empty:
            return "no error reported"
        return str(message) if status == "error" else "it ended early"


class _RecordingDataset(LeRobotDataset):
    """A LeRobotDataset whose streaming encoder never drops frames."""

    @staticmethod
    def _build_streaming_encoder(
        fps: int,
        rgb_encoder: RGBEncoderConfig | None,
        depth_encoder: object,
        encoder_queue_maxsize: int,
        encoder_threads: int | None,
    ) -> StreamingVideoEncoder:
        return BlockingStreamingEncoder(
            fps=fps,
            rgb_encoder=rgb_encoder,
            depth_encoder=depth_encoder,
            queue_maxsize=encoder_queue_maxsize,
            encoder_threads=encoder_threads,
        )


def create_empty(root: Path, spec: WriterSpec) -> None:
    """Write a new dataset with no episodes at `root` (which must not exist)."""
    dataset = LeRobotDataset.create(
        spec.repo_id,
        spec.fps,
        dataset_features(spec.cameras, intervention=spec.intervention),
        root=root,
        robot_type=spec.robot_type,
        use_videos=True,
        video_backend="pyav",
    )
    dataset.finalize()


def create_streaming(
    root: Path, repo_id: str, fps: int, features: dict, robot_type: str | None, rgb_encoder: RGBEncoderConfig | None
) -> LeRobotDataset:
    """A new dataset at `root` written frame by frame, its videos streamed to encoders that never drop a frame."""
    return _RecordingDataset.create(
        repo_id,
        fps,
        features,
        root=root,
        robot_type=robot_type,
        use_videos=True,
        video_backend="pyav",
        rgb_encoder=rgb_encoder,
        streaming_encoding=True,
    )


def open_for_append(spec: WriterSpec) -> LeRobotDataset:
    """Open an existing dataset for writing new episodes, each into new files."""
    return _RecordingDataset.resume(
        spec.repo_id,
        root=spec.root,
        video_backend="pyav",  # skips probing torchcodec, which needs system FFmpeg libraries
        rgb_encoder=RGBEncoderConfig(vcodec=spec.vcodec),
        streaming_encoding=True,
        encoder_queue_maxsize=spec.encoder_queue_frames,
    )


def add_frame(
    dataset: LeRobotDataset,
    state: np.ndarray,
    action: np.ndarray,
    images: dict[str, np.ndarray],
    task: str,
    intervention: bool | None = None,
) -> None:
    """Hand one frame to LeRobot (it copies state and action; the encoder copies images).

    `intervention`: the frame's value of the `intervention` feature, for datasets that have it.
    """
    frame = {STATE_KEY: state.copy(), ACTION_KEY: action.copy(), "task": task}
    if intervention is not None:
        frame[INTERVENTION_KEY] = np.array([intervention], dtype=bool)
    for name, image in images.items():
        frame[camera_key(name)] = image
    dataset.add_frame(frame)


def save_and_close(dataset: LeRobotDataset) -> None:
    """Write the episode in the buffer, then finalize (parquet footers, metadata flushed)."""
    dataset.save_episode()
    dataset.finalize()


def discard(dataset: LeRobotDataset) -> None:
    """Drop the episode in the buffer and its partial videos."""
    dataset.clear_episode_buffer()


def encoder_waits(dataset: LeRobotDataset) -> int:
    """Frames that had to wait for an encoder since the dataset was opened."""
    encoder = getattr(dataset.writer, "_streaming_encoder", None)
    return getattr(encoder, "waits", 0)


def abandon(dataset: LeRobotDataset) -> None:
    """Disarm a dataset object after a failed save: it must never write again, not even when collected."""
    writer, meta = dataset.writer, dataset.meta
    with contextlib.suppress(Exception):
        writer._streaming_encoder.cancel_episode()
    meta._metadata_buffer.clear()
    for owner in (writer, meta):
        with contextlib.suppress(Exception):
            if owner._pq_writer is not None:
                owner._pq_writer.close()
        owner._pq_writer = None
        owner._finalized = True
    dataset._is_finalized = True


def video_frame_count(path: Path) -> int:
    """Frames in a video file, from its container header (no decoding)."""
    with av.open(str(path)) as container:
        return int(container.streams.video[0].frames)
