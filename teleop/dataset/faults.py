"""Test hooks: make the writer die, stop or hit a full disk at a named point of its work.

    SO101_DATASET_FAULT="kill@save:lerobot_saved"      SIGKILL itself there (a kill -9 that lands exactly)
    SO101_DATASET_FAULT="stop@frame:5"                 SIGSTOP itself there (the test then kills it)
    SO101_DATASET_FAULT="enospc@save:lerobot_saved"    raise OSError(ENOSPC) there

Points: "frame:<n>" (after frame n of an episode reached LeRobot), "save:journaled",
"save:lerobot_saved", "save:finalized", "save:sidecars_written", "save:committed",
"save:reopened" (the writer process reopened LeRobot for the next episode, not yet replied) and
"repair:restored" (a rollback half done: files deleted and restored, journal not yet). A fault fires
once: it is removed from the variable when it fires, so a test can check that the next episode
succeeds. Unset in production; reading one environment variable is the whole cost.
"""

import errno
import os
import signal

ENV = "SO101_DATASET_FAULT"


def fault_point(name: str) -> None:
    """Act on the fault armed for this point, if any."""
    armed = os.environ.get(ENV)
    if not armed:
        return
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
