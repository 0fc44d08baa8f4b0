"""Why a control-loop run ended, typed: the summary prints its text, the exit status follows its kind.

Before, the reason was a string the commands compared by prefix (`stopped_by.startswith("Ctrl-C")`,
`startswith("followers frozen")`), so rewording a message changed an exit status.

    done      the run did what it was asked (every episode, the duration)
    key       the person pressed q
    signal    Ctrl-C, SIGTERM or SIGHUP: the safe exit followed
    safety    the safety layer stopped it (e-stop, watchdog, a silent motor): exit 1
    failure   the command's own failure (a policy error): exit 1
    save      an episode's save failed, so fewer were kept than asked for: exit 1
"""

from dataclasses import dataclass
from enum import StrEnum


class StopKind(StrEnum):
    """What ended a run."""

    DONE = "done"
    KEY = "key"
    SIGNAL = "signal"
    SAFETY = "safety"
    FAILURE = "failure"
    SAVE = "save"


@dataclass(frozen=True)
class StopReason:
    """What ended a run, and the words for the summary line ("stopped by ...")."""

    kind: StopKind
    text: str

    def __str__(self) -> str:
        return self.text

    @property
    def failed(self) -> bool:
        """Whether the run fell short of what was asked (the command then exits 1)."""
        return self.kind in (StopKind.SAFETY, StopKind.FAILURE, StopKind.SAVE)


DONE = StopReason(StopKind.DONE, "done")
