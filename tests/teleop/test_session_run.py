"""run_session: how a recording session's loop ends, and that an interrupted episode is discarded."""

import contextlib

import pytest

from robot.rig import SafetyStopError
from teleop.session_run import run_session


class Loop:
    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error

    def run(self) -> None:
        if self.error is not None:
            raise self.error


class Session:
    def __init__(self) -> None:
        self.abandoned = 0

    def abandon_episode(self) -> None:
        self.abandoned += 1


class PolicyError(Exception):
    pass


@pytest.mark.parametrize(
    ("error", "expected", "abandoned"),
    [
        (None, "done", 0),
        (KeyboardInterrupt(), "Ctrl-C (the episode in progress was discarded)", 1),
        (SafetyStopError("e-stop"), "e-stop (the episode in progress was discarded)", 1),
        (PolicyError("NaN in chunk 3"), "the policy failed: NaN in chunk 3", 1),
    ],
)
def test_how_the_session_stopped_and_the_episode_in_progress(error, expected, abandoned):
    session = Session()
    failures = {PolicyError: "the policy failed: {error}"}
    stopped_by = run_session(Loop(error), session, contextlib.nullcontext(), failures)
    assert stopped_by == expected
    assert session.abandoned == abandoned


def test_other_errors_propagate_and_discard_nothing():
    session = Session()
    with pytest.raises(ValueError, match="a bug"):
        run_session(Loop(ValueError("a bug")), session, contextlib.nullcontext())
    assert session.abandoned == 0
