"""Retries inside tests: bounded, logged as warnings, and counted for the session's summary.

A test that retries hides how often the thing it exercises misses. So a retry here states its
bound, says why it fires (a warning in the captured log), and lands in a session-wide tally that
`tests/conftest.py` prints at the end of the run ("in-test retries: N", per test): the number the
release note quotes. Needing more than the bound fails the test with every attempt's reason.

    from tests.support.retries import retrying

    # an exception that warrants another try (clean up in `before_retry`)
    device = retrying(connect, what="LeRobot connect", retries=1, retry_on=(ConnectionError,),
                      before_retry=drain)

    # a result that warrants another try: `retry_if` returns the reason, or None to accept it
    done = retrying(teleoperate, what="lerobot-teleoperate", retries=1,
                    retry_if=lambda r: "connect-time miss" if r.returncode and "in connect" in r.stderr else None)

Only misses the product cannot prevent belong here (a stock client with no retries of its own,
a scheduling artefact); anything else should fail at once.
"""

import dataclasses
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from tests.support import session_files

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Retry:
    """One retry that fired: in which test, of what, before which attempt, and why."""

    test: str  # pytest node id, e.g. "tests/test_commands_e2e.py::test_sim_calibrate_and_lerobot_teleoperate"
    what: str  # what was retried, e.g. "lerobot-teleoperate"
    attempt: int  # the attempt the retry started (2 for the first retry)
    reason: str


class RetriesExhaustedError(AssertionError):
    """An attempt still failed after its bound of retries (fails the test)."""


class SessionTally:
    """The session's retries, kept in its shared folder so that every xdist worker's count reaches the summary."""

    KIND = "retries"

    def append(self, retry: Retry) -> None:
        session_files.append(self.KIND, dataclasses.asdict(retry))

    def __iter__(self) -> Iterator[Retry]:
        return iter([Retry(**record) for record in session_files.read(self.KIND)])

    def __len__(self) -> int:
        return len(session_files.read(self.KIND))


# The session's tally, read by the terminal summary in tests/conftest.py (a test of the helper
# itself swaps in a list of its own).
TALLY: SessionTally | list[Retry] = SessionTally()


def current_test() -> str:
    """The running test's node id (pytest sets PYTEST_CURRENT_TEST to "<nodeid> (<phase>)")."""
    return os.environ.get("PYTEST_CURRENT_TEST", "<outside a test>").rsplit(" (", 1)[0]


def retrying[T](
    attempt: Callable[[], T],
    *,
    what: str,
    retries: int,
    retry_on: tuple[type[BaseException], ...] = (),
    retry_if: Callable[[T], str | None] = lambda _: None,
    before_retry: Callable[[], None] = lambda: None,
) -> T:
    """`attempt()` once, then up to `retries` more times while it misses; returns the accepted result.

    A miss is an exception of a type in `retry_on`, or a result for which `retry_if` returns a
    reason (a string; None accepts the result). Each retry is logged as a warning with its reason
    and appended to `TALLY`; `before_retry` runs before each one (close a port, drain late bytes).
    Other exceptions propagate at once. Raises `RetriesExhaustedError` (chained to the last exception,
    if any) when the last allowed attempt misses too.
    """
    if retries < 0:
        raise ValueError(f"retries={retries}: must be >= 0")
    reasons: list[str] = []
    for number in range(1, retries + 2):
        if number > 1:
            reason = reasons[-1]
            TALLY.append(Retry(current_test(), what, number, reason))
            logger.warning("retry %d/%d of %s in %s: %s", number - 1, retries, what, current_test(), reason)
            before_retry()
        try:
            result = attempt()
        except retry_on as e:
            reasons.append(f"{type(e).__name__}: {e}")
            last_error: BaseException | None = e
        else:
            miss = retry_if(result)
            if miss is None:
                return result
            reasons.append(miss)
            last_error = None
    listed = "\n".join(f"  attempt {i}: {r}" for i, r in enumerate(reasons, start=1))
    message = f"{what} missed on all {retries + 1} attempts (bound: {retries} retries):\n{listed}"
    raise RetriesExhaustedError(message) from last_error


def summary_lines(tally: Iterable[Retry]) -> list[str]:
    """The terminal summary: the total, then each test with its retries and their reasons."""
    tally = list(tally)
    lines = [f"in-test retries: {len(tally)}"]
    by_test: dict[str, list[Retry]] = {}
    for retry in tally:
        by_test.setdefault(retry.test, []).append(retry)
    for test, fired in by_test.items():
        lines.append(f"  {test}: {len(fired)}")
        lines += [f"    {r.what}, before attempt {r.attempt}: {r.reason[:300]}" for r in fired]
    return lines
