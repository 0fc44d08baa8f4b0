"""One writer per dataset: an exclusive flock on the dataset directory itself.

Locking the directory (not a lock file in it) adds nothing to the dataset, so a refused or
read-only open leaves it byte-identical. The kernel releases the lock when the holder dies, so a
killed writer never leaves a stale lock; an old writer process still finishing its last save makes
a new one wait a little instead of writing beside it.
"""

import fcntl
import os
import time
from pathlib import Path

from teleop.dataset.errors import DatasetLockedError

_POLL_S = 0.1


class DatasetLock:
    """An exclusive lock on a dataset root, held until `release()`."""

    def __init__(self, root: Path, timeout_s: float) -> None:
        """Take the lock, waiting up to `timeout_s`.

        Raises:
            DatasetLockedError: another process holds it after the wait.
        """
        self.root = root
        self._fd: int | None = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    self.release()
                    raise DatasetLockedError(
                        f"{root} is being written by another process. Next: stop the other recording "
                        "(or wait for it to finish saving), then try again."
                    ) from None
                time.sleep(_POLL_S)

    def release(self) -> None:
        """Let go of the lock (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
