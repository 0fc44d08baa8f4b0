"""Keep the episodes whose facts pass a condition: "dropped_frames == 0 and idle_percent < 30".

    condition = parse_condition("verdict == keep and achieved_fps >= 29")
    condition.passes(facts)          # facts: EPISODE_FACTS of one episode -> bool

A condition is clauses joined by `and`, each `FIELD OP VALUE` with OP one of == != < <= > >=. The
fields (EPISODE_FACTS) come from the episode itself (frames, duration_s) and from its quality card
(the rest); an episode whose card is missing or stale cannot pass a clause on the card, and the
command says how many were left out for that. Nothing is evaluated as Python.
"""

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from teleop.dataset.curate.errors import CurationError

# field -> what it is (for --help and the error that names the fields)
EPISODE_FACTS = {
    "frames": "frames in the episode",
    "duration_s": "length of the episode, s",
    "achieved_fps": "control-loop rate achieved while recording, Hz",
    "dropped_frames": "camera frames lost, all cameras together",
    "idle_percent": "share of frames in which no body joint moved, %",
    "limit_hits": "goals the safety layer clamped to a joint limit",
    "skew_p99_ms": "p99 spread of the cameras' capture times, ms",
    "writer_dropped": "frames the dataset writer could not take",
    "verdict": "the quality gates' verdict: keep, or the gate that failed",
}
CARD_FREE = frozenset({"frames", "duration_s"})  # known without a quality card
_OPS: dict[str, Callable[[object, object], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}
_CLAUSE = re.compile(r"^\s*([a-z_0-9]+)\s*(==|!=|<=|>=|<|>)\s*(\S+)\s*$")


@dataclass(frozen=True)
class Clause:
    """One `FIELD OP VALUE` test."""

    field: str
    op: str
    value: float | str

    def passes(self, facts: Mapping[str, float | str | None]) -> bool:
        """Whether the episode's fact passes (a fact the episode does not have never does)."""
        fact = facts.get(self.field)
        if fact is None:
            return False
        if isinstance(self.value, str):
            return self.op in ("==", "!=") and _OPS[self.op](str(fact), self.value)
        return _OPS[self.op](float(fact), self.value)


@dataclass(frozen=True)
class Condition:
    """Clauses that must all pass."""

    clauses: tuple[Clause, ...]
    text: str

    @property
    def needs_card(self) -> bool:
        """Whether a clause reads the quality card (so an episode without one cannot pass)."""
        return any(c.field not in CARD_FREE for c in self.clauses)

    def passes(self, facts: Mapping[str, float | str | None]) -> bool:
        """Whether every clause passes."""
        return all(c.passes(facts) for c in self.clauses)


def parse_condition(text: str) -> Condition:
    """`text` as a Condition.

    Raises:
        CurationError: a clause that is not FIELD OP VALUE, an unknown field, or an order on a word.
    """
    clauses = []
    for part in re.split(r"\s+and\s+", text.strip()):
        match = _CLAUSE.match(part)
        if not match:
            raise CurationError(
                f"--filter: {part.strip()!r} is not FIELD OP VALUE; "
                "e.g. --filter='dropped_frames == 0 and idle_percent < 30'"
            )
        field, op, raw = match.groups()
        if field not in EPISODE_FACTS:
            raise CurationError(f"--filter: no field {field!r}; the fields are {', '.join(EPISODE_FACTS)}")
        try:
            value: float | str = float(raw)
        except ValueError:
            value = raw.strip("'\"")
            if op not in ("==", "!="):
                raise CurationError(f"--filter: {part.strip()!r} orders a word; use == or != with {value!r}") from None
        clauses.append(Clause(field, op, value))
    return Condition(tuple(clauses), text.strip())


def card_facts(frames: int, fps: float, card: Mapping | None) -> dict[str, float | str | None]:
    """The facts a condition reads, from an episode's length and its quality card (None: no usable card)."""
    facts: dict[str, float | str | None] = {"frames": frames, "duration_s": frames / fps}
    if card is None:
        return facts
    dropped = card.get("dropped_frames")
    facts.update(
        {
            "achieved_fps": card.get("achieved_fps"),
            "dropped_frames": sum(dropped.values()) if isinstance(dropped, Mapping) else dropped,
            "idle_percent": None if card.get("idle_fraction") is None else 100.0 * float(card["idle_fraction"]),
            "limit_hits": card.get("limit_hits"),
            "skew_p99_ms": card.get("skew_p99_ms"),
            "writer_dropped": card.get("writer_dropped"),
            "verdict": card.get("verdict"),
        }
    )
    return facts
