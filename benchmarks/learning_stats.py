"""The learning loop's figures: truth read back from quality cards, intervals, coverage, the training curve.

    truth_scores(root)                  -> [{"R1": .., "R2": .., "R3": ..}, ...] one per recorded episode
    summarise(scores)                   -> per criterion and total: mean with the report's 95 % t-interval
    interval_coverage(scores, n, ...)   -> how often the report's interval covers the true mean
    training_curve(log, log_freq)       -> [{step, loss, update_s, data_s}, ...] from lerobot-train's log

The intervals are the report's own (`evaluation/report/stats.py`), so what the coverage measures is
what `so101-report` prints.
"""

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from evaluation.report.stats import mean_t_interval
from evaluation.truth import CARD_KEY
from teleop.dataset.sidecar import QUALITY_FILE, SIDECAR_DIR

CRITERIA = ("R1", "R2", "R3")
TOTAL = "total"  # R1 + R2 + R3, 0..3


def truth_scores(root: Path) -> list[dict[str, float]]:
    """Each recorded episode's truth scores, in episode order (an episode without truth is an error)."""
    cards = sorted((Path(root) / SIDECAR_DIR).glob(f"episode-*/{QUALITY_FILE}"))
    scores = []
    for card in cards:
        truth = json.loads(card.read_text()).get(CARD_KEY)
        if truth is None:
            raise ValueError(f"{card} has no truth: was it recorded on the virtual rig with virtual cameras?")
        scores.append({c: float(truth["scores"][c]) for c in CRITERIA})
    return scores


def _column(scores: Sequence[Mapping[str, float]], key: str) -> np.ndarray:
    if key == TOTAL:
        return np.array([sum(s[c] for c in CRITERIA) for s in scores], dtype=float)
    return np.array([s[key] for s in scores], dtype=float)


def summarise(scores: Sequence[Mapping[str, float]]) -> dict[str, dict[str, float | int | str | bool | None]]:
    """Mean and 95 % t-interval of each criterion (0..1) and of the total (0..3)."""
    out = {c: mean_t_interval(_column(scores, c), bounds=(0.0, 1.0)).to_dict() for c in CRITERIA}
    out[TOTAL] = mean_t_interval(_column(scores, TOTAL), bounds=(0.0, 3.0)).to_dict()
    return out


def interval_coverage(
    scores: Sequence[Mapping[str, float]], n: int, resamples: int = 2000, seed: int = 0
) -> dict[str, float]:
    """Share of `resamples` samples of `n` episodes whose t-interval covers the population's mean.

    The recorded episodes are the population: each sample draws `n` of them with replacement (a
    new campaign of `n` episodes from the same task and policy), and the report's interval of its
    mean either covers the population mean or not. A sample with no spread has no interval: it
    counts as not covering, as a report that can state no interval covers nothing.
    """
    rng = np.random.default_rng(seed)
    coverage = {}
    for key in (*CRITERIA, TOTAL):
        column = _column(scores, key)
        truth = float(column.mean())
        upper = 3.0 if key == TOTAL else 1.0
        hits = 0
        for _ in range(resamples):
            estimate = mean_t_interval(rng.choice(column, size=n, replace=True), bounds=(0.0, upper))
            hits += estimate.low is not None and estimate.low <= truth <= estimate.high
        coverage[key] = hits / resamples
    return coverage


_PROGRESS = re.compile(r"\bstep:\S+ .*\bloss:([0-9.eE+-]+).*\bupdt_s:([0-9.eE+-]+).*\bdata_s:([0-9.eE+-]+)")


def training_curve(log: str, log_freq: int) -> list[dict[str, float]]:
    """Step, loss and seconds per update and per batch of each of lerobot-train's progress lines.

    The lines ("step:2K smpl:16K ... loss:0.512 grdn:... lr:... updt_s:0.402 data_s:0.061") round
    the step to thousands, so it is counted instead: lerobot-train logs every `log_freq` steps.
    """
    curve = []
    for line in log.splitlines():
        match = _PROGRESS.search(line)
        if match:
            loss, update_s, data_s = (float(g) for g in match.groups())
            curve.append({"step": (len(curve) + 1) * log_freq, "loss": loss, "update_s": update_s, "data_s": data_s})
    return curve
