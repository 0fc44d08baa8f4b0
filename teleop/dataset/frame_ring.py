"""Fixed-size frame slots in shared memory, written by the control side and read by the writer process.

    slot k:  | state f32[12] | action f32[12] | timing length u32 | timing JSON | image 0 | image 1 | ...
              `---------------------- header, 4 KiB ------------------------'  h*w*3 bytes per camera

The ring only holds bytes; who may use which slot is decided by its owner (`DatasetWriter`: a
semaphore of free slots, and slot numbers sent in order over a pipe). A write is one memcpy per
camera (about 0.1-0.3 ms for 480x640 RGB), so `add_frame` stays cheap on the control thread.

Two kinds of memory hold it. A writer forked from the control process inherits an anonymous shared
mapping (`inherited=True`): it has no name, so nothing is left behind when either process is
killed, no resource-tracker process is needed to clean it up (8 MB), and it is not limited by the
size of /dev/shm. A spawned writer cannot inherit a mapping, so it attaches to a named POSIX block
in /dev/shm, sized to fit there (`slots_that_fit`).
"""

import json
import logging
import mmap
import os
from collections.abc import Mapping
from multiprocessing import shared_memory
from typing import Protocol

import numpy as np

from robot.joints import BIMANUAL_KEYS
from teleop.dataset.errors import FrameError, SharedMemoryError
from teleop.dataset.features import CameraShape

logger = logging.getLogger(__name__)

_JOINTS = len(BIMANUAL_KEYS)
_HEADER_BYTES = 8192  # state + action + timing length + timing JSON (a corrected rollout keeps ~80 facts)
_TIMING_OFFSET = 2 * 4 * _JOINTS + 4
_TIMING_MAX = _HEADER_BYTES - _TIMING_OFFSET
_ALIGN = 64
SHM_DIR = "/dev/shm"  # where Linux keeps POSIX shared memory (a tmpfs; 64 MB in a default Docker container)
_SHM_SHARE = 0.8  # of its free space the ring may plan to use: other programs need some too


def _aligned(size: int) -> int:
    return (size + _ALIGN - 1) // _ALIGN * _ALIGN


def slot_layout(cameras: tuple[CameraShape, ...]) -> tuple[list[int], int]:
    """Byte offset of each camera's image inside a slot, and the slot size."""
    offsets = []
    offset = _HEADER_BYTES
    for _, height, width in cameras:
        offsets.append(offset)
        offset += _aligned(height * width * 3)
    return offsets, _aligned(offset)


def slots_that_fit(wanted: int, slot_bytes: int, shm_dir: str = SHM_DIR) -> int:
    """`wanted` slots, or fewer if the shared-memory filesystem could not hold them all.

    The ring's pages are only touched as a backlog reaches them, so a ring larger than the
    tmpfs works until the encoder falls behind far enough, and then the process dies of SIGBUS.
    Sized to fit, it drops (and counts) frames instead.

    Raises:
        SharedMemoryError: not even two slots fit.
    """
    try:
        stat = os.statvfs(shm_dir)
    except OSError:
        return wanted  # not Linux's tmpfs layout: nothing to check against
    free = stat.f_bavail * stat.f_frsize
    fit = int(free * _SHM_SHARE) // slot_bytes
    if fit >= wanted:
        return wanted
    if fit < 2:
        raise SharedMemoryError(
            f"{shm_dir} has {free / 2**20:.1f} MB free; the frame ring needs at least {2 * slot_bytes / 2**20:.1f} MB."
            " Next: free space in /dev/shm, or start the container with --shm-size=1g"
        )
    logger.warning(
        "%s has %.0f MB free: the frame ring holds %d frames instead of %d; a slow encoder drops frames sooner"
        " (start the container with --shm-size=1g to avoid this)",
        shm_dir,
        free / 2**20,
        fit,
        wanted,
    )
    return fit


class _Memory(Protocol):
    """What the ring needs of its memory: `SharedMemory`'s shape."""

    @property
    def buf(self) -> memoryview: ...
    @property
    def name(self) -> str | None: ...
    @property
    def size(self) -> int: ...
    def close(self) -> None: ...
    def unlink(self) -> None: ...


class InheritedMemory:
    """An anonymous shared mapping: shared with children forked after it is made, freed with the last."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.name = None  # nothing to attach to: a child gets it by being forked
        self._map = mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
        self.buf = memoryview(self._map)

    def close(self) -> None:
        """Unmap in this process; BufferError while a view into it is alive (as `SharedMemory`)."""
        self.buf.release()  # idempotent; the mapping itself refuses to close while exported
        self._map.close()

    def unlink(self) -> None:
        """Nothing to do: the kernel frees the pages when the last process unmaps them."""


class FrameRing:
    """`slots` frames of one rig's shape in shared memory (inherited, or a named block)."""

    def __init__(self, memory: _Memory, cameras: tuple[CameraShape, ...], slots: int) -> None:
        self.memory = memory
        self.cameras = cameras
        self.slots = slots
        self._image_offsets, self.slot_bytes = slot_layout(cameras)
        if memory.size < self.slot_bytes * slots:
            raise ValueError(f"shared memory {memory.name or '(inherited)'} is too small for {slots} slots")

    @classmethod
    def create(
        cls,
        cameras: tuple[CameraShape, ...],
        slots: int,
        *,
        prefault_slots: int | None = None,
        inherited: bool = False,
    ) -> "FrameRing":
        """Allocate a new ring (the control side owns it and must `unlink()` it).

        `inherited`: for a writer forked after this call (anonymous memory, no name); otherwise a
        named block another process can `attach` to. The first `prefault_slots` slots (all by
        default) are touched now, so the control loop pays no page faults on them; shared memory
        takes RAM only for the pages touched.
        """
        slot_bytes = slot_layout(cameras)[1]
        size = slot_bytes * slots
        memory = InheritedMemory(size) if inherited else shared_memory.SharedMemory(create=True, size=size)
        touched = slot_bytes * (slots if prefault_slots is None else min(prefault_slots, slots))
        np.ndarray((touched,), np.uint8, memory.buf).fill(0)
        return cls(memory, cameras, slots)

    @classmethod
    def attach(cls, name: str, cameras: tuple[CameraShape, ...], slots: int) -> "FrameRing":
        """Map an existing ring by name (the writer process side)."""
        return cls(shared_memory.SharedMemory(name=name), cameras, slots)

    @property
    def name(self) -> str | None:
        """The shared-memory block's name (None for inherited memory)."""
        return self.memory.name

    @property
    def nbytes(self) -> int:
        """Bytes of shared memory the ring uses."""
        return self.slot_bytes * self.slots

    def write(
        self,
        slot: int,
        state: np.ndarray,
        action: np.ndarray,
        images: Mapping[str, np.ndarray],
        timing: Mapping[str, float],
    ) -> None:
        """Copy one frame into a slot the caller owns. Shapes are checked by the caller.

        Raises:
            FrameError: the timing facts do not fit in the slot header.
        """
        try:
            encoded = json.dumps({str(key): float(value) for key, value in timing.items()}).encode()
        except (TypeError, ValueError) as error:
            raise FrameError(f"timing facts must be numbers (seconds, counts): {error}") from error
        if len(encoded) > _TIMING_MAX:
            raise FrameError(f"timing facts take {len(encoded)} bytes as JSON; at most {_TIMING_MAX} fit a frame")
        base = slot * self.slot_bytes
        header = np.ndarray((2, _JOINTS), np.float32, self.memory.buf, base)
        header[0] = state
        header[1] = action
        self.memory.buf[base + _TIMING_OFFSET - 4 : base + _TIMING_OFFSET] = len(encoded).to_bytes(4, "little")
        self.memory.buf[base + _TIMING_OFFSET : base + _TIMING_OFFSET + len(encoded)] = encoded
        for (name, height, width), offset in zip(self.cameras, self._image_offsets, strict=True):
            np.copyto(np.ndarray((height, width, 3), np.uint8, self.memory.buf, base + offset), images[name])

    def read(self, slot: int) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], dict[str, float]]:
        """A slot's frame: state and action copied, images as views into shared memory (valid until freed)."""
        base = slot * self.slot_bytes
        header = np.ndarray((2, _JOINTS), np.float32, self.memory.buf, base)
        length = int.from_bytes(self.memory.buf[base + _TIMING_OFFSET - 4 : base + _TIMING_OFFSET], "little")
        timing = json.loads(bytes(self.memory.buf[base + _TIMING_OFFSET : base + _TIMING_OFFSET + length]))
        # Views through a memoryview slice hold an export of the mapping (an ndarray made straight
        # from the buffer does not), so `close()` cannot unmap memory a view still points into.
        images = {
            name: np.frombuffer(self.memory.buf[base + offset : base + offset + height * width * 3], np.uint8).reshape(
                height, width, 3
            )
            for (name, height, width), offset in zip(self.cameras, self._image_offsets, strict=True)
        }
        return header[0].copy(), header[1].copy(), images, timing

    def close(self) -> None:
        """Unmap the block in this process (left to process exit if a view is still alive)."""
        try:
            self.memory.close()
        except BufferError:
            logger.debug("shared memory %s still has views; it is unmapped at exit", self.memory.name or "(inherited)")

    def unlink(self) -> None:
        """Free the block (owner only, once every process has closed or died)."""
        self.memory.unlink()
