"""Running a recording session's control loop to its end: the one place that decides how it stopped.

    reason = run_session(loop, session, status, stops=stops)             # teleop/recording_run.py
    reason = run_session(loop, session, status, {InferenceError: "the policy failed: {error} ..."}, stops=stops)

A stop signal (Ctrl-C, SIGTERM, SIGHUP: the loop stops at its next tick) and a safety stop
(e-stop, watchdog) end the loop; the episode in progress is then discarded (a saved episode is
never touched, a save in progress goes on) and the typed reason is returned (teleop/stop_reason.py).
Commands add their own failures (a policy's) as error types with a message template.
"""

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext

from robot.control_loop import ControlLoop
from robot.rig import SafetyStopError
from robot.signals import SignalStop, StopSignals
from teleop.session import RecordingSession
from teleop.stop_reason import DONE, StopKind, StopReason

DISCARDED = "(the episode in progress was discarded)"


def run_session(
    loop: ControlLoop,
    session: RecordingSession,
    status: AbstractContextManager,
    failures: Mapping[type[Exception], str] | None = None,
    *,
    stops: StopSignals | None = None,
) -> StopReason:
    """Run `loop` inside the live `status` line until the session ends; returns why it stopped.

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
        reason = StopReason(StopKind.SIGNAL, f"{stops.reason if stops is not None else stop} {DISCARDED}")
    except KeyboardInterrupt:
        reason = StopReason(StopKind.SIGNAL, f"Ctrl-C {DISCARDED}")
    except SafetyStopError as error:
        if stops is not None and stops.escalated:  # the e-stop was a second signal's
            reason = StopReason(StopKind.SIGNAL, f"{stops.reason} {DISCARDED}")
        else:
            reason = StopReason(StopKind.SAFETY, f"{error} {DISCARDED}")
    except tuple(failures) as error:
        template = next(text for kind, text in failures.items() if isinstance(error, kind))
        reason = StopReason(StopKind.FAILURE, template.format(error=error))
    else:
        if stops is None or stops.reason is None:
            return DONE
        reason = StopReason(StopKind.SIGNAL, f"{stops.reason} {DISCARDED}")
    session.abandon_episode()
    return reason
