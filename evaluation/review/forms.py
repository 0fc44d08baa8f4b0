"""The override form as posted by the episode page (application/x-www-form-urlencoded), parsed and checked.

Parsing is done here rather than by FastAPI's `Form` (which needs python-multipart): the form is
small and flat, and every field is validated with a message a reviewer can act on. The body is read
by `body_limit.read_body`, which refuses more than MAX_BODY_BYTES before buffering it. Who is
reviewing is not a form field: the server's reviewer is fixed at start (a posted `reviewer` is ignored).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import parse_qs

from evaluation.errors import EvaluationError
from evaluation.overrides import REASON_CODES
from evaluation.vocabulary import SCORE_LEVELS

MAX_BODY_BYTES = 64 * 1024  # a larger post is refused (a note is a few lines)
MAX_NOTE_CHARS = 4000  # longer notes are refused, not cut


class FormError(EvaluationError):
    """A posted override form is invalid; the message says which field and what is allowed."""


@dataclass(frozen=True)
class OverrideForm:
    """One posted override."""

    csrf: str  # the page's form token
    criterion: str  # criterion id
    score: float | None  # 0, 0.5 or 1 (None when missing: reported as an error)
    reason: str  # reason code
    note: str  # free text
    expected_old: float | None  # the effective score shown on the page
    time_s: float  # video position to come back to, episode seconds
    filters: str  # the episode list's query string, kept for j/k navigation


def parse_form(body: bytes) -> dict[str, str]:
    """Decode a urlencoded body into its first value per field.

    Raises:
        FormError: The body is too large or not UTF-8.
    """
    if len(body) > MAX_BODY_BYTES:
        raise FormError(f"the form is {len(body)} bytes; at most {MAX_BODY_BYTES} are accepted")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormError("the form is not UTF-8 text") from e
    return {k: v[0] for k, v in parse_qs(text, keep_blank_values=True).items()}


def override_form(fields: dict[str, str]) -> OverrideForm:
    """Read an override from form fields (the CSRF token is checked by the caller, not here; `reviewer` is ignored).

    Raises:
        FormError: A field is missing or not allowed.
    """
    note = fields.get("note", "")
    if len(note) > MAX_NOTE_CHARS:
        raise FormError(f"the note has {len(note)} characters; at most {MAX_NOTE_CHARS} are accepted")
    reason = fields.get("reason", "")
    if reason not in REASON_CODES:
        raise FormError(f"choose a reason code (got {reason!r}; allowed: {', '.join(REASON_CODES)})")
    return OverrideForm(
        csrf=fields.get("csrf", ""),
        criterion=fields.get("criterion", ""),
        score=_score(fields.get("score", ""), "score", required=True),
        reason=reason,
        note=note,
        expected_old=_score(fields.get("expected_old", ""), "expected_old", required=False),
        time_s=parse_time(fields.get("t", "")),
        filters=fields.get("filters", ""),
    )


def _score(raw: str, name: str, required: bool) -> float | None:
    if raw == "":
        if required:
            raise FormError(f"choose a {name}: one of {', '.join(f'{s:g}' for s in SCORE_LEVELS)}")
        return None
    try:
        value = float(raw)
    except ValueError:
        raise FormError(f"{name}={raw!r} is not a number; allowed: {list(SCORE_LEVELS)}") from None
    if value not in SCORE_LEVELS:
        raise FormError(f"{name}={raw!r}; allowed: {list(SCORE_LEVELS)}")
    return value


def parse_time(raw: str) -> float:
    """A video position in seconds; anything unusable (empty, negative, NaN, text) is 0."""
    try:
        value = float(raw) if raw else 0.0
    except ValueError:
        return 0.0
    return value if math.isfinite(value) and value >= 0 else 0.0
