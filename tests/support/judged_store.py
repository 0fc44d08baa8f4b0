"""The review tests' judged store: what its judge run scores, and how to show that run untouched."""

import sqlite3
from pathlib import Path

from evaluation.store import APPEND_ONLY_TABLES

# Judge scores per episode and sample (R1, R2, R3). Routed: episode 0 on R3 (2 of 3 samples agree on 0.5),
# episode 2 on R2 (one sample says uncertain), episode 4 on R3 (the motion heuristic saw a push).
JUDGE_SCRIPT: dict[int, tuple[tuple[float, float, float], ...]] = {
    0: ((1, 1, 0.5), (1, 1, 1), (1, 1, 0.5)),
    1: ((0, 0, 0),) * 3,
    2: ((0.5, 0.5, 0),) * 3,
    3: ((1, 1, 0),) * 3,
    4: ((1, 1, 0),) * 3,
}
# (episode, sample) -> the criteria that sample marks uncertain
UNCERTAIN: dict[tuple[int, int], tuple[str, ...]] = {(2, 1): ("R2",)}
ROUTED = (0, 2, 4)  # the episodes JUDGE_SCRIPT routes to a reviewer


def judge_tables(path: Path) -> dict[str, list[tuple]]:
    """Every row of the judge's append-only tables (to show they are untouched)."""
    raw = sqlite3.connect(path)
    try:
        return {t: raw.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in APPEND_ONLY_TABLES}
    finally:
        raw.close()
