"""Test hooks: make the writer die, stop, hit a full disk or lose a video frame at a named point of its work.

    SO101_DATASET_FAULT="kill@save:lerobot_saved"      SIGKILL itself there (a kill -9 that lands exactly)
    SO101_DATASET_FAULT="stop@frame:5"                 SIGSTOP itself there (the test then kills it)
    SO101_DATASET_FAULT="enospc@save:lerobot_saved"    raise OSError(ENOSPC) there
    SO101_DATASET_FAULT="skip@encoder:feed"            skip what comes next there (a frame: a short video)

Points: "frame:<n>" (after frame n of an episode reached LeRobot), "save:journaled",
"save:lerobot_saved", "save:finalized", "save:sidecars_written", "save:committed",
"save:reopened" (the writer process reopened LeRobot for the next episode, not yet replied),
"repair:restored" (a rollback half done: files deleted and restored, journal not yet) and
"encoder:feed" (one camera's frame about to be queued for its video encoder). A fault fires
once: it is removed from the variable when it fires, so a test can check that the next episode
succeeds. Unset in production; reading one environment variable is the whole cost.
"""

import errno
import os
import signal

ENV = "SO101_DATASET_FAULT"


def fault_point(name: str) -> bool:
    """Act on the fault armed for this point, if any; True when a "skip" fired (the caller skips its step)."""
    armed = os.environ.get(ENV)
    if not armed:
        return False
    items = [item.strip() for item in armed.split(",")]
    for item in items:
        action, _, point = item.partition("@")
        if point != name:
            continue
        os.environ[ENV] = ",".join(other for other in items if other != item)
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        elif action == "enospc":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC) + f" (injected at {name})")
        elif action == "skip":
            return True
    return False
