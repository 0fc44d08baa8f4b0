"""Typed errors of the evaluation layer.

Each message says what failed and what to do next; the shell (robot/shell/run.py) prints it as one
line: a `ConfigError` exits 2 (usage, nothing ran), any other exits 1.
"""

from robot.shell.errors import CommandError, UsageError


class EvaluationError(CommandError):
    """Base class of every error raised by the evaluation layer."""


class ConfigError(EvaluationError, UsageError):
    """A configuration value is invalid (names the field, the value and what is allowed): exit 2, nothing ran."""


class RubricError(EvaluationError):
    """A rubric file is missing, unreadable or inconsistent."""


class DatasetReadError(EvaluationError):
    """A LeRobot dataset (metadata, signals or videos) could not be read."""


class FrameDecodeError(DatasetReadError):
    """A video frame at a requested time could not be decoded."""


class MissingApiKeyError(EvaluationError):
    """No API key is available for the LLM judge."""


class TruthError(EvaluationError):
    """Virtual ground truth cannot be used: none carried, a definition this code does not know, or malformed."""


class StoreError(EvaluationError):
    """The SQLite evaluation store could not be opened, migrated or written."""


class RunAbortedError(EvaluationError):
    """The API refuses every request (bad key, spend limit, rejected parameters): the run stops."""


class JudgeCallError(EvaluationError):
    """A judge call failed after its retries; `reason` is a short machine-readable code.

    Reasons: `rate_limited`, `spend_limit`, `overloaded`, `server_error`, `timeout`, `connection`,
    `bad_request`, `auth` (401: the key is rejected), `permission` (403: the key lacks access),
    `refusal`, `breaker_open` (the run's overload breaker stopped it), `batch_errored`,
    `batch_expired`, `batch_canceled`, `other`.
    """

    def __init__(
        self,
        reason: str,
        detail: str,
        attempts: int = 1,
        request_id: str | None = None,
        retry_reasons: tuple[str, ...] = (),
    ) -> None:
        """Build the error.

        Args:
            reason: Short reason code (see the class docstring).
            detail: Human-readable detail, e.g. the server's error message.
            attempts: How many requests were sent before giving up.
            request_id: The last request id the server reported, if any.
            retry_reasons: The reason of each failed attempt that was retried (attempts - 1 of them).
        """
        super().__init__(f"judge call failed ({reason}) after {attempts} attempt(s): {detail}")
        self.reason = reason
        self.detail = detail
        self.attempts = attempts
        self.request_id = request_id
        self.retry_reasons = retry_reasons
