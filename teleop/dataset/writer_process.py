"""The control side of the dataset writer: hands frames to a writer process without ever waiting.

    control thread (30 Hz)                         writer process (nice +5, no CAP_SYS_NICE)
    ----------------------                         -----------------------------------------
    add_frame(state, action, images, timing)
      free_slots.acquire(nowait) --full?--> False (counted as dropped, never silent)
      copy into ring[slot] ──────────────> shared memory ring ──> ring.read(slot)
      pipe.send(("frame", slot)) ────────> pipe (in order) ─────> DurableDataset.add_frame
                                                                   LeRobotDataset.add_frame
                                                                   encoder queue (blocks when full:
                                                                   backpressure, not loss)
                                           free_slots.release() <─ slot done
    save_episode(quality) ──("save")─────> drain earlier frames, commit (journal, fsync)
      blocks until durable <──("reply")─── SavedEpisode; then reopen for the next episode

Every call but `open`, `save_episode` and `close` returns at once: `add_frame` costs one memcpy per
camera and one small pipe write. An error in the writer process (full disk, encoder crash) comes
back as its typed error at the next call; if the process dies, the next call raises
WriterProcessError instead of waiting (see `writer_link.py`). Frames the ring had no room for are
counted per episode and reported by `save_episode`; the encoders never drop frames.

Thread safety: one thread records (begin/add/discard); `save_episode` and `close` may run on
another thread, during which `add_frame` raises WriterStateError. `backlog` may be read anywhere.
Scripts that open a writer need the `if __name__ == "__main__":` guard (it is spawned once threads run).
"""

import collections
import contextlib
import ctypes
import gc
import logging
import multiprocessing
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from enum import StrEnum

import numpy as np

from teleop.dataset.errors import FrameError, WriterProcessError, WriterStateError
from teleop.dataset.features import check_frame
from teleop.dataset.frame_ring import FrameRing, slot_layout, slots_that_fit
from teleop.dataset.privileges import Demotion
from teleop.dataset.results import OpenReport, SavedEpisode
from teleop.dataset.sidecar import quality_json
from teleop.dataset.spec import WriterSpec
from teleop.dataset.writer_link import WriterLink, longest_wait_s

logger = logging.getLogger(__name__)
PREFAULT_SLOTS = 2  # ring slots touched at open (the rest only when a backlog reaches them)
_LIBC = ctypes.CDLL(None)


class _State(StrEnum):
    NEW = "new"
    IDLE = "idle"
    RECORDING = "recording"
    CLOSED = "closed"
    BROKEN = "broken"


_HINTS = {
    _State.NEW: "call open() first",
    _State.CLOSED: "the writer is closed; make a new one",
    _State.RECORDING: "an episode is in progress: save or discard it first",
    _State.IDLE: "no episode in progress: call begin_episode() first",
}


class DatasetWriter:
    """Writes episodes into a LeRobot dataset from a separate process (see the module docstring)."""

    def __init__(self, spec: WriterSpec) -> None:
        self.spec = spec
        self.demotion: Demotion | None = None  # what the writer process did to its own priority
        self.report: OpenReport | None = None  # what `open()` found and repaired
        self._state = _State.NEW
        self._lock = threading.Lock()
        self._episodes = 0
        self._sent = 0  # frames of the episode handed to the ring
        self._dropped = 0  # frames of the episode refused because the ring was full
        # Slots sent and not yet known to be free (oldest first), and slots known free (most recently
        # freed last): reusing the most recently freed slot keeps the ring's memory to the backlog
        # actually in use (a writer that keeps up cycles through two or three slots, not all of them).
        self._in_flight: collections.deque[int] = collections.deque()
        self._free_stack: list[int] = []
        self._broken: WriterProcessError | None = None
        self._ring: FrameRing | None = None
        self._free = None
        self._link: WriterLink | None = None
        self._heap_frozen = False  # this writer holds the heap frozen (see `_SharedHeap`)

    # --- blocking calls ----------------------------------------------------------------------

    def open(self) -> OpenReport:
        """Start the writer process, which creates or repairs and resumes the dataset (blocking: seconds).

        Raises:
            DatasetError: from the writer process (exists, incompatible, locked, corrupt...).
        """
        with self._lock:
            if self._state is not _State.NEW:
                raise WriterStateError("open() was already called. Next: make a new DatasetWriter")
            method = _start_method()
            if method == "fork":
                # LeRobot's dataset modules (with the processor, tokenizer, torchvision and triton
                # modules they pull in) are imported here, once, and the forked writer shares them:
                # imported in the writer they cost ~45 MB of its own (measured with smaps_rollup).
                import teleop.dataset.durable  # noqa: F401
            context = multiprocessing.get_context(method)
            inherited = method == "fork"  # a forked writer inherits anonymous memory, not bound by /dev/shm
            if not inherited:
                slots = slots_that_fit(self.spec.ring_frames, slot_layout(self.spec.cameras)[1])
                if slots != self.spec.ring_frames:
                    self.spec = replace(self.spec, ring_s=slots / self.spec.fps)  # what the writer attaches to
            self._ring = FrameRing.create(
                self.spec.cameras, self.spec.ring_frames, prefault_slots=PREFAULT_SLOTS, inherited=inherited
            )
            self._free = context.Semaphore(self.spec.ring_frames)
            self._free_stack = list(range(self.spec.ring_frames))[::-1]  # slot 0 first
            self._in_flight.clear()
            if inherited:  # a spawned writer shares no heap: nothing to keep shared
                gc.collect()  # garbage freed now is not copied into the writer
                _shared_heap.freeze()
                self._heap_frozen = True  # until the writer is gone (`_release`)
                # Free heap pages go back to the system before the fork, rather than stay resident in
                # both processes (~6 MB of peak PSS in the benchmark's recording).
                _LIBC.malloc_trim(0)
            try:
                self._link = WriterLink(self.spec, self._ring, self._free, context)
            except BaseException:
                self._thaw_heap()
                raise
            try:
                self.report, self.demotion = self._link.wait_reply(0)
            except BaseException:
                self._release()
                self._state = _State.CLOSED
                raise
            self._episodes = self.report.episodes
            self._state = _State.IDLE
            return self.report

    def save_episode(self, quality: Mapping | None = None) -> SavedEpisode:
        """Make the episode durable with its quality card (blocking until its files are fsynced).

        Returns:
            SavedEpisode: index, frames, frames dropped because the ring was full, frames missing
                from the videos, save seconds (from this call until durable).

        Blocks at most `longest_save_s`: a writer that takes longer than `spec.save_timeout_s` is
        killed, and the next open rolls the episode back.

        Raises:
            DiskFullError, EncoderError, DatasetError: the save was rolled back; earlier episodes
                are intact (ShortVideoError: its videos came out short). WriterProcessError: the
                writer process died, or hung and was killed; the episode is not saved.
        """
        started = time.monotonic()
        with self._lock:
            self._require(_State.RECORDING, "save_episode")
            try:
                card = quality_json(quality or {})
            except (TypeError, ValueError) as error:
                raise FrameError(f"the quality card cannot be saved: {error}") from error
            if self._sent == 0:
                raise WriterStateError(f"episode {self._episodes} has no frames ({self._dropped} dropped); discard it")
            self._state = _State.IDLE  # the writer ends the episode whatever the outcome
            with self._supervised():
                saved = self._link.request("save", card, timeout_s=self.spec.save_timeout_s)
            self._episodes += 1
            return replace(saved, dropped_frames=self._dropped, save_s=time.monotonic() - started)

    def close(self) -> None:
        """Discard an unsaved episode, stop the writer process and free the ring (idempotent)."""
        with self._lock:
            if self._state in (_State.NEW, _State.CLOSED, _State.BROKEN):
                self._state = _State.CLOSED
                return
            if self._state is _State.RECORDING:
                logger.warning("closing with episode %d unsaved: it is discarded", self._episodes)
            try:
                with self._supervised():
                    self._link.request("close")
            finally:
                self._release()
                self._state = _State.CLOSED

    def __enter__(self) -> "DatasetWriter":
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- fast calls (control thread) ---------------------------------------------------------

    def begin_episode(self, task: str) -> int:
        """Start an episode; returns its index (without waiting for the writer process)."""
        with self._lock:
            self._require(_State.IDLE, "begin_episode")
            if not task.strip():
                raise FrameError("the task text is empty. Next: say what the demonstration does, e.g. 'Fold the cloth'")
            with self._supervised():
                self._link.raise_async_error()
                self._link.send(("begin", task))
            self._sent = self._dropped = 0
            self._state = _State.RECORDING
            return self._episodes

    def add_frame(
        self,
        state: np.ndarray,
        action: np.ndarray,
        images: Mapping[str, np.ndarray],
        timing: Mapping[str, float],
    ) -> bool:
        """Copy one frame into shared memory for the writer; False (and counted) if the ring is full.

        Raises:
            FrameError: the frame does not fit the dataset. WriterStateError: no episode, or a
                save/close is running. DatasetError: the writer lost the episode (it is over).
        """
        if not self._lock.acquire(blocking=False):
            raise WriterStateError("add_frame() while a save or close is running. Next: wait for it to return")
        try:
            self._require(_State.RECORDING, "add_frame")
            with self._supervised():
                self._take_async_error()
                check_frame(self.spec.cameras, state, action, images)
                slot = self._take_slot()
                if slot is None:
                    self._dropped += 1
                    return False
                try:
                    self._ring.write(slot, state, action, images, timing)
                except BaseException:
                    self._free_stack.append(slot)
                    self._free.release()
                    raise
                self._link.send(("frame", slot))
                self._in_flight.append(slot)
            self._sent += 1
            return True
        finally:
            self._lock.release()

    def _take_slot(self) -> int | None:
        """A free slot, the most recently freed one; None when the ring is full.

        The writer frees slots in the order it received them, one semaphore release each: the free
        count says how many of the oldest slots in flight it is done with.
        """
        if not self._free.acquire(block=False):
            return None
        free = self._free.get_value() + 1  # + the one just taken
        while len(self._free_stack) < free and self._in_flight:
            self._free_stack.append(self._in_flight.popleft())
        return self._free_stack.pop()

    def discard_episode(self) -> None:
        """Drop the episode in progress (no-op if none)."""
        with self._lock:
            if self._state is _State.RECORDING:
                self._state = _State.IDLE
                with self._supervised():
                    self._link.send(("discard",))

    @property
    def backlog(self) -> int:
        """Frames handed over but not yet taken by LeRobot (at most the ring's size)."""
        if self._free is None or self._state in (_State.CLOSED, _State.BROKEN):
            return 0
        return self.spec.ring_frames - self._free.get_value()

    @property
    def longest_save_s(self) -> float:
        """The longest `save_episode` can block before it returns or raises, seconds (from the spec)."""
        return longest_wait_s(self.spec.save_timeout_s)

    @property
    def dropped_frames(self) -> int:
        """Frames of the current (or last) episode refused because the ring was full."""
        return self._dropped

    @property
    def pid(self) -> int | None:
        """The writer process's id (None before `open`)."""
        return None if self._link is None else self._link.pid

    # --- internals ---------------------------------------------------------------------------

    def _require(self, state: _State, call: str) -> None:
        if self._state is _State.BROKEN:
            raise self._broken
        if self._state is not state:
            raise WriterStateError(f"{call}() not allowed now. Next: {_HINTS[self._state]}")

    def _take_async_error(self) -> None:
        try:
            self._link.raise_async_error()
        except WriterProcessError:
            raise
        except BaseException:
            self._state = _State.IDLE  # the writer has already dropped the episode
            raise

    @contextlib.contextmanager
    def _supervised(self) -> Iterator[None]:
        """A dead or hung writer process leaves this writer broken: every later call re-raises."""
        try:
            yield
        except WriterProcessError as error:
            self._broken = error
            self._state = _State.BROKEN
            self._release()
            raise

    def _release(self) -> None:
        if self._link is not None:
            self._link.shut_down()
        if self._ring is not None:
            self._ring.close()
            self._ring.unlink()
            self._ring = None
        self._thaw_heap()

    def _thaw_heap(self) -> None:
        if self._heap_frozen:
            self._heap_frozen = False
            _shared_heap.thaw()


class _SharedHeap:
    """Keeps the garbage collector off the pages a forked writer shares with this process.

    A collection writes into the header of every object it visits, so each page it touches is
    copied: one `gc.collect()` in the control process while a forked writer ran added ~106 MB to
    the recording's peak PSS (both processes' copies; `record_writer`, h264). Frozen objects are
    never visited, by this process's collector nor by the writer's (which inherits the freeze).
    They stay frozen while any forked writer lives, and are collectable again once none does.
    """

    def __init__(self) -> None:
        self._holders = 0
        self._lock = threading.Lock()

    def freeze(self) -> None:
        """Freeze every object tracked now (objects made later are collected as usual)."""
        with self._lock:
            self._holders += 1
            gc.freeze()

    def thaw(self) -> None:
        """Release one `freeze`; the last release unfreezes."""
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                gc.unfreeze()


_shared_heap = _SharedHeap()


def _start_method() -> str:
    """Fork while this process has no other thread yet, else spawn.

    A forked writer shares the pages of torch and LeRobot the control process already imported (a
    spawned one imports its own copy: ~250 MB more). Forking is only safe before any thread starts
    (cameras, bus pools, inference): commands open their writer first.
    """
    return "fork" if threading.active_count() == 1 else "spawn"
