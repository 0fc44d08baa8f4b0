"""The in-test retry helper: bounded, logged, counted, and failing past its bound."""

import logging

import pytest

import tests.support.retries as retries
from tests.support.retries import RetriesExhaustedError, retrying, summary_lines


@pytest.fixture
def tally(monkeypatch):
    """A tally of this test's own, so the helper's tests do not count in the session's summary."""
    mine: list[retries.Retry] = []
    monkeypatch.setattr(retries, "TALLY", mine)
    return mine


def flaky(*outcomes):
    """An attempt that raises or returns each outcome in turn; `calls` counts the attempts."""
    queue = list(outcomes)

    def attempt():
        attempt.calls += 1
        outcome = queue.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    attempt.calls = 0
    return attempt


def test_an_attempt_that_succeeds_is_not_counted(tally):
    assert retrying(flaky("ok"), what="thing", retries=2, retry_on=(ConnectionError,)) == "ok"
    assert tally == []


def test_a_retry_is_logged_with_its_reason_and_counted_for_the_running_test(tally, caplog):
    cleanups = []
    attempt = flaky(ConnectionError("no status packet"), "ok")
    with caplog.at_level(logging.WARNING, logger="tests.support.retries"):
        result = retrying(
            attempt,
            what="connect",
            retries=1,
            retry_on=(ConnectionError,),
            before_retry=lambda: cleanups.append("drained"),
        )
    assert result == "ok"
    assert attempt.calls == 2
    assert cleanups == ["drained"]
    (retry,) = tally
    this_test = test_a_retry_is_logged_with_its_reason_and_counted_for_the_running_test.__name__
    assert retry.test == f"tests/test_retries.py::{this_test}"
    assert (retry.what, retry.attempt) == ("connect", 2)
    assert "no status packet" in retry.reason
    assert any(r.levelno == logging.WARNING and "no status packet" in r.getMessage() for r in caplog.records)


def test_a_result_can_ask_for_a_retry(tally):
    attempt = flaky(1, 0)
    assert retrying(attempt, what="run", retries=1, retry_if=lambda code: f"exit {code}" if code else None) == 0
    assert [r.reason for r in tally] == ["exit 1"]


def test_needing_more_than_the_bound_fails_with_every_reason(tally):
    attempt = flaky(ConnectionError("first"), ConnectionError("second"), "never reached")
    with pytest.raises(RetriesExhaustedError, match=r"(?s)connect missed on all 2 attempts.*first.*second") as info:
        retrying(attempt, what="connect", retries=1, retry_on=(ConnectionError,))
    assert attempt.calls == 2
    assert isinstance(info.value.__cause__, ConnectionError)
    assert len(tally) == 1


def test_other_exceptions_are_not_retried(tally):
    attempt = flaky(KeyError("bug"), "ok")
    with pytest.raises(KeyError):
        retrying(attempt, what="connect", retries=3, retry_on=(ConnectionError,))
    assert attempt.calls == 1
    assert tally == []


def test_the_summary_names_the_total_and_each_test():
    fired = [
        retries.Retry("a.py::t1", "connect", 2, "timeout"),
        retries.Retry("a.py::t1", "connect", 3, "timeout"),
        retries.Retry("b.py::t2", "teleoperate", 2, "motor check failed"),
    ]
    lines = summary_lines(fired)
    assert lines[0] == "in-test retries: 3"
    assert "  a.py::t1: 2" in lines
    assert "  b.py::t2: 1" in lines
    assert summary_lines([]) == ["in-test retries: 0"]
