"""Running a recording session's control loop to its end: the one place that decides how it stopped.

    stopped_by = run_session(loop, session, status)             # so101-record
    stopped_by = run_session(loop, session, status, {InferenceError: "the policy failed: {error} ..."})

Ctrl-C and a safety stop (e-stop, watchdog) end the loop; the episode in progress is then
discarded (a saved episode is never touched) and the reason is returned for the summary line.
Commands add their own failures (a policy's) as error types with a message template.
"""

from collections.abc import Mapping
from contextlib import AbstractContextManager

from robot.control_loop import ControlLoop
from robot.rig import SafetyStopError
from teleop.session import RecordingSession

DISCARDED = "(the episode in progress was discarded)"


def run_session(
    loop: ControlLoop,
    session: RecordingSession,
    status: AbstractContextManager,
    failures: Mapping[type[Exception], str] | None = None,
) -> str:
    """Run `loop` inside the live `status` line until the session ends; returns "done" or why it stopped.

    `failures`: further errors that end the session, each with a message template ("{error}").
    """
    failures = failures or {}
    try:
        with status:
            loop.run()
    except KeyboardInterrupt:
        stopped_by = f"Ctrl-C {DISCARDED}"
    except SafetyStopError as error:
        stopped_by = f"{error} {DISCARDED}"
    except tuple(failures) as error:
        template = next(text for kind, text in failures.items() if isinstance(error, kind))
        stopped_by = template.format(error=error)
    else:
        return "done"
    session.abandon_episode()
    return stopped_by
