"""The dataset writer process: takes frames from the ring and writes them through `DurableDataset`.

It runs everything heavy (LeRobot, PyAV, the encoders), so first of all it demotes itself: no
CAP_SYS_NICE, no real-time rlimit, nice +5 (see `privileges.py`). Messages arrive in order on one
pipe, so the frames of an episode are always handled before the save or discard that ends it.

    ("frame", slot)                 add the frame in `slot` to the episode, then free the slot
    ("begin", task)                 start an episode
    ("discard",)                    drop the episode in progress
    ("save", id, quality_json)      commit the episode  -> ("reply", id, SavedEpisode | error)
    ("close", id)                   finish and exit     -> ("reply", id, None)
    after start                                         -> ("reply", 0, (OpenReport, Demotion) | error)
    a failure while recording                           -> ("error", DatasetError)  (episode lost)

If the control process goes away (the pipe closes), the episode in progress is discarded and the
process exits; a save already under way finishes first, so it is never torn by the parent's death
(its reply, with nobody left to read it, is dropped). The process runs in a session of its own and
ignores SIGINT, SIGTERM and SIGHUP: a terminal's Ctrl-C or hangup reaches the control process's whole
group, and a stop signal must never tear a commit. Only the control process ends it, over the pipe.
"""

import ctypes
import json
import logging
import os
import signal
import warnings
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Semaphore
from typing import TYPE_CHECKING

from teleop.dataset.errors import DatasetError, WriterProcessError
from teleop.dataset.faults import fault_point
from teleop.dataset.frame_ring import FrameRing
from teleop.dataset.privileges import demote_this_process
from teleop.dataset.spec import WriterSpec

if TYPE_CHECKING:
    from teleop.dataset.durable import DurableDataset

logger = logging.getLogger(__name__)

_AV_LOG_ERROR = 16  # libavutil/log.h
_M_ARENA_MAX = -8  # glibc malloc.h
_LIBC = ctypes.CDLL(None)


def run_writer(
    spec: WriterSpec,
    conn: Connection,
    ring: FrameRing | str,
    free_slots: Semaphore,
    parent_end_fd: int | None = None,
) -> None:
    """Entry point of the writer process (multiprocessing target).

    `ring`: when forked, the control process's ring (its memory inherited); when spawned, the name
    of the block to attach to. `parent_end_fd`: when forked, the inherited copy of the control
    process's end of the pipe, closed here so that the control process's death reads as end-of-file.
    """
    if parent_end_fd is not None:
        os.close(parent_end_fd)
    # Ctrl-C and a hangup reach the terminal's whole process group, systemd's SIGTERM the whole unit:
    # the control process decides when the writer stops (and if it dies, the pipe's end says so).
    _leave_process_group()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    demotion = demote_this_process(spec.nice)  # before any encoder thread exists: they inherit it
    _LIBC.mallopt(_M_ARENA_MAX, 2)  # SVT-AV1's ~140 threads would each keep a malloc arena otherwise
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")  # no progress bars over the status line
    # ...and LeRobot's attempts to turn them back on would warn once per save.
    warnings.filterwarnings("ignore", message="Cannot enable progress bars")
    logging.basicConfig(level=logging.WARNING, format="dataset writer: %(levelname)s %(name)s: %(message)s")
    _quiet_codecs()
    if isinstance(ring, str):
        ring = FrameRing.attach(ring, spec.cameras, spec.ring_frames)
    try:
        from teleop.dataset.durable import DurableDataset  # heavy (LeRobot): after the demotion

        dataset = DurableDataset.open(spec)
    except BaseException as error:  # every failure goes back to the caller
        _send(conn, ("reply", 0, _portable(error)))
        ring.close()
        return
    try:
        if not _send(conn, ("reply", 0, (dataset.report, demotion))):
            return
        _serve(dataset, conn, ring, free_slots)
    finally:
        dataset.close()
        ring.close()


def _serve(dataset: "DurableDataset", conn: Connection, ring: FrameRing, free_slots: Semaphore) -> None:
    failed: DatasetError | None = None  # why the episode in progress was lost (already reported)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            logger.warning("the recording process went away; the episode in progress (if any) is discarded")
            return
        kind = message[0]
        if kind == "frame":
            try:
                if failed is None:
                    state, action, images, timing = ring.read(message[1])
                    dataset.add_frame(state, action, images, timing)
                    del images  # views into the slot, which is reused once freed
            except Exception as error:
                failed = _portable(error)
                if not _send(conn, ("error", failed)):
                    return
            finally:
                free_slots.release()
        elif kind == "begin":
            failed = None
            try:
                dataset.begin_episode(message[1])
            except Exception as error:
                failed = _portable(error)
                if not _send(conn, ("error", failed)):
                    return
        elif kind == "discard":
            failed = None
            dataset.discard_episode()
            _LIBC.malloc_trim(0)
        elif kind == "save":
            outcome = failed or _save(dataset, message[2])
            failed = None
            # Reopen before replying, while the operator resets the scene: the episode is durable
            # already, and a next episode begun right after the reply would otherwise queue its
            # first ~0.3 s of frames in the ring while LeRobot reopens.
            try:
                dataset.prepare_next()
                fault_point("save:reopened")
            except Exception:
                logger.exception("reopening the dataset after a save failed; the next episode will retry")
            _LIBC.malloc_trim(0)  # hand the finished encoders' memory back: peak RSS stays flat
            if not _send(conn, ("reply", message[1], outcome)):
                return  # the episode is durable; nobody is left to tell
        elif kind == "close":
            dataset.close()
            _send(conn, ("reply", message[1], None))
            return


def _send(conn: Connection, message: tuple) -> bool:
    """Send to the control process; False when it has gone away (the pipe is closed)."""
    try:
        conn.send(message)
    except (BrokenPipeError, EOFError, OSError):
        logger.warning("the recording process went away; what was saved stays saved, and this writer exits")
        return False
    return True


def _leave_process_group() -> None:
    """Run in a session of our own (no controlling terminal, no group signals from it)."""
    try:
        os.setsid()
    except OSError:  # already a session or group leader (a spawned writer run by hand)
        logger.debug("the dataset writer keeps its process group")


def _save(dataset: "DurableDataset", quality_json: str) -> object:
    try:
        return dataset.save_episode(json.loads(quality_json))
    except Exception as error:
        dataset.discard_episode()
        return _portable(error)


def _portable(error: BaseException) -> DatasetError:
    """An error that pickles back to the control process with its type (ours) or its text (others)."""
    if isinstance(error, DatasetError):
        return error
    logger.error("unexpected failure in the dataset writer", exc_info=error)
    return WriterProcessError(
        f"the dataset writer failed: {type(error).__name__}: {error}. Next: run again with resume; "
        "saved episodes are safe and opening the dataset repairs it."
    )


def _quiet_codecs() -> None:
    """Keep libx264/SVT-AV1 banners off the operator's terminal (errors still show).

    LeRobot hands FFmpeg's log back to its default stderr printer after every video, so the
    threshold is set in libavutil itself (the copy bundled with PyAV) rather than through PyAV.
    """
    os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1: errors only
    import av  # only here: the control process never needs PyAV

    del av  # loaded for its bundled libavutil
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libavutil" in line}
    for path in paths:
        try:
            ctypes.CDLL(path).av_log_set_level(_AV_LOG_ERROR)
        except (OSError, AttributeError) as error:
            logger.debug("cannot quiet %s: %s", path, error)
