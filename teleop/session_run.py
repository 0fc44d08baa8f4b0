"""Running a recording session's control loop to its end: the one place that decides how it stopped.

    stopped_by = run_session(loop, session, status, stops=stops)             # so101-record
    stopped_by = run_session(loop, session, status, {InferenceError: "the policy failed: {error} ..."}, stops=stops)

A stop signal (Ctrl-C, SIGTERM, SIGHUP: the loop stops at its next tick) and a safety stop
(e-stop, watchdog) end the loop; the episode in progress is then discarded (a saved episode is
never touched, a save in progress goes on) and the reason is returned for the summary line.
Commands add their own failures (a policy's) as error types with a message template.
"""

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext

from robot.control_loop import ControlLoop
from robot.rig import SafetyStopError
from robot.signals import SignalStop, StopSignals
from teleop.session import RecordingSession

DISCARDED = "(the episode in progress was discarded)"


def run_session(
    loop: ControlLoop,
    session: RecordingSession,
    status: AbstractContextManager,
    failures: Mapping[type[Exception], str] | None = None,
    *,
    stops: StopSignals | None = None,
) -> str:
    """Run `loop` inside the live `status` line until the session ends; returns "done" or why it stopped.

    `failures`: further errors that end the session, each with a message template ("{error}").
    `stops`: the command's stop signals; a signal then stops the loop at its next tick.

    Raises:
        SignalStop: a second signal escalated (e-stop): nothing is discarded here, the writer
            process drops the episode in progress when the command exits.
    """
    failures = failures or {}
    stopping = stops.stopping(loop.stop) if stops is not None else nullcontext()
    try:
        with status, stopping:
            loop.run()
    except SignalStop as stop:
        if stop.escalated:
            raise
        stopped_by = f"{stops.reason if stops is not None else stop} {DISCARDED}"
    except KeyboardInterrupt:
        stopped_by = f"Ctrl-C {DISCARDED}"
    except SafetyStopError as error:
        escalated = stops is not None and stops.escalated  # the e-stop was a second signal's
        stopped_by = f"{stops.reason if escalated else error} {DISCARDED}"
    except tuple(failures) as error:
        template = next(text for kind, text in failures.items() if isinstance(error, kind))
        stopped_by = template.format(error=error)
    else:
        if stops is None or stops.reason is None:
            return "done"
        stopped_by = f"{stops.reason} {DISCARDED}"
    session.abandon_episode()
    return stopped_by
