"""Errors of so101-report; each message says what is missing and the command that fixes it."""

from evaluation.errors import EvaluationError


class ReportError(EvaluationError):
    """The report cannot be made from what was given."""


class MissingStoreError(ReportError):
    """No evaluation store at the given (or default) path."""


class UnknownTagError(ReportError):
    """No judge run carries the requested tag."""


class NoScoresError(ReportError):
    """The selection holds no scored episode."""
