"""Where a report's scores come from, in words: every table, plot and JSON view is labelled from here.

A policy's scores come from one scorer (load.py picks it): the LLM judge, written "judge (<model>)",
or the motion heuristic, written "heuristic", so heuristic scores are never called a judge's. The
effective view adds the latest person's override of each cell: "effective (heuristic + 2 person
overrides)". A cell's own source is the scorer's label, or "person" where an override counts ("live
operator" where it is the score the operator typed during the rollout: a person's label too).
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluation.overrides import LIVE_REASON
from evaluation.report.scores import Cell, PolicyScores, View
from evaluation.vocabulary import ScoreSource, source_label


def scorer_kind(scores: PolicyScores) -> ScoreSource:
    """The scorer of a policy's scores: the heuristic or the judge."""
    return ScoreSource.HEURISTIC if scores.scorer == ScoreSource.HEURISTIC else ScoreSource.JUDGE


def scorer_label(scores: PolicyScores) -> str:
    """The scorer in words: "heuristic", or "judge (<model>, ...)" with the models of the results used."""
    kind = scorer_kind(scores)
    return source_label(kind, "" if kind is ScoreSource.HEURISTIC else ", ".join(scores.models))


def override_count(scores: PolicyScores) -> int:
    """Cells of the policy that carry a person's override (a confirmation included)."""
    return sum(c.human is not None for e in scores.episodes for c in e.cells)


def live_count(scores: PolicyScores) -> int:
    """Cells whose person's label is the operator's live score, typed during the rollout (in `override_count`)."""
    return sum(c.human is not None and c.human.reason == LIVE_REASON for e in scores.episodes for c in e.cells)


def view_label(scores: PolicyScores, view: View) -> str:
    """The label of a policy's figures in a view, e.g. "heuristic" or "effective (judge + 3 person overrides)".

    Live scores are people's labels too; when some are, it says how many: "(judge + 3 person overrides, 2 live)".
    """
    if view is View.JUDGE:
        return scorer_label(scores)
    n, live = override_count(scores), live_count(scores)
    of_them = f", {live} live" if live else ""
    return (
        f"effective ({scorer_kind(scores).value} + {n} {ScoreSource.PERSON.value} "
        f"override{'' if n == 1 else 's'}{of_them})"
    )


def view_kind(scores: PolicyScores, view: View) -> str:
    """A short, stable name of the view for the JSON output: "heuristic", "judge" or "effective"."""
    return scorer_kind(scores).value if view is View.JUDGE else View.EFFECTIVE.value


def kind_word(policies: Sequence[PolicyScores]) -> str:
    """The scorer shared by the policies ("heuristic" or "judge"), or "scorer" when they differ."""
    kinds = {scorer_kind(p) for p in policies}
    return kinds.pop().value if len(kinds) == 1 else "scorer"


def column_label(policies: Sequence[PolicyScores], view: View) -> str:
    """The label of a view shared by several policies (a column header, a plot's legend or title)."""
    if len(policies) == 1:
        return view_label(policies[0], view)
    if view is View.JUDGE:
        labels = {scorer_label(p) for p in policies}
        return labels.pop() if len(labels) == 1 else f"{kind_word(policies)} (per policy)"
    return f"effective ({kind_word(policies)} + {ScoreSource.PERSON.value} overrides)"


def cell_source(scores: PolicyScores, cell: Cell, view: View) -> str:
    """Who gave a cell's score in a view: the scorer's label, or "person" ("live operator") where a label counts."""
    if view is View.EFFECTIVE and cell.human is not None:
        return ScoreSource.LIVE_OPERATOR.value if cell.human.reason == LIVE_REASON else ScoreSource.PERSON.value
    return scorer_label(scores)
