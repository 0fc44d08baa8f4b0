"""Export the evaluation store to CSV or parquet (one flat row per run, episode and criterion).

Columns: run and dataset identity (run_id, created_at, tag, scorer, model, rubric_version,
prompt_hash, dataset_id, dataset_revision), the episode (episode_index, status, total, routed), and the
criterion (criterion, source, scored_by, score, mean, agreement, n_valid, n_samples, uncertain,
heuristic_score, criterion_routed, route_reasons, evidence_frames). `source` is the stored code ("judge",
"heuristic" or "truth"); `scored_by` says it for people, with the judge's model: "judge (claude-...)",
"heuristic" or "virtual ground truth" (continuous scores), the words the report and the review page
use. Person overrides are not rows here (they live in the `overrides` table; so101-report shows them
beside these scores).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from evaluation.errors import ConfigError
from evaluation.store import EvaluationStore
from evaluation.vocabulary import source_label

_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "r.run_id"),
    ("created_at", "r.created_at"),
    ("tag", "r.tag"),
    ("scorer", "r.scorer"),
    ("model", "r.model"),
    ("rubric_version", "r.rubric_version"),
    ("prompt_hash", "r.prompt_hash"),
    ("dataset_id", "r.dataset_id"),
    ("dataset_revision", "r.dataset_revision"),
    ("episode_index", "e.episode_index"),
    ("episode_fingerprint", "e.episode_fingerprint"),
    ("status", "e.status"),
    ("total", "e.total"),
    ("routed", "e.routed"),
    ("criterion", "s.criterion"),
    ("source", "s.source"),
    ("score", "s.score"),
    ("mean", "s.mean"),
    ("agreement", "s.agreement"),
    ("n_valid", "s.n_valid"),
    ("n_samples", "s.n_samples"),
    ("uncertain", "s.uncertain"),
    ("heuristic_score", "s.heuristic_score"),
    ("criterion_routed", "s.routed"),
    ("route_reasons", "s.route_reasons_json"),
    ("evidence_frames", "s.evidence_frames_json"),
)
_SQL = (
    "SELECT "
    + ", ".join(f"{expr} AS {name}" for name, expr in _COLUMNS)
    + " FROM scores s JOIN episode_results e ON e.id = s.result_id JOIN runs r ON r.run_id = e.run_id"
    + " ORDER BY r.created_at, e.episode_index, s.id"
)
_NAMES: tuple[str, ...] = tuple(
    n for name, _ in _COLUMNS for n in ((name, "scored_by") if name == "source" else (name,))
)  # every column in order: the stored ones, with `scored_by` after `source`


def scores_table(store: EvaluationStore) -> pa.Table:
    """All scores as an Arrow table (columns in `_NAMES` order, also when empty)."""
    rows = [_with_label(dict(r)) for r in store.query(_SQL)]
    if not rows:
        return pa.table({name: pa.array([], pa.string()) for name in _NAMES})
    return pa.Table.from_pylist(rows)


def _with_label(row: dict[str, object]) -> dict[str, object]:
    row["scored_by"] = source_label(str(row["source"]), str(row["model"]))
    return {name: row[name] for name in _NAMES}


def export_scores(store: EvaluationStore, path: Path) -> int:
    """Write all scores to `path` (.csv or .parquet); returns the number of rows.

    Raises:
        ConfigError: The suffix is neither .csv nor .parquet.
    """
    table = scores_table(store)
    path.parent.mkdir(parents=True, exist_ok=True)
    match path.suffix.lower():
        case ".csv":
            pacsv.write_csv(table, path)
        case ".parquet":
            pq.write_table(table, path)
        case _:
            raise ConfigError(f"export path {path} must end in .csv or .parquet")
    return table.num_rows
