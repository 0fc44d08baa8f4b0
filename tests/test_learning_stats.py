"""The learning-loop benchmark's figures: truth from the cards, the report's intervals and their coverage, the curve."""

import json

import numpy as np
import pytest

from benchmarks.learning_stats import TOTAL, interval_coverage, summarise, training_curve, truth_scores
from teleop.dataset.sidecar import QUALITY_FILE, episode_dir

# Two of lerobot-train 0.6.1's progress lines as it logs them (log_freq 150), between other output.
TRAIN_LOG = "\n".join(
    [
        "INFO 2026-12-06 12:40:01 ot_train.py:641 step:150 smpl:1K ep:2 epch:0.39 loss:4.812 grdn:61.305"
        " lr:3.0e-04 updt_s:0.411 data_s:0.052 smp/s:16 l1_loss:0.959 kld_loss:0.385",
        "Map: 100%|##########| 510/510",
        "INFO 2026-12-06 12:41:03 ot_train.py:641 step:300 smpl:2K ep:5 epch:0.78 loss:1.250 grdn:20.118"
        " lr:3.0e-04 updt_s:0.398 data_s:0.047 smp/s:16 l1_loss:0.602 kld_loss:0.065",
        "INFO 2026-12-06 12:41:04 ot_train.py:687 Checkpoint policy after step 300",
    ]
)


def _card(root, index: int, card: dict) -> None:
    folder = episode_dir(root, index)
    folder.mkdir(parents=True)
    (folder / QUALITY_FILE).write_text(json.dumps(card))


def test_truth_is_read_in_episode_order_and_an_episode_without_it_is_named(tmp_path):
    for index, r1 in ((1, 0.25), (0, 1.0)):
        _card(tmp_path, index, {"truth": {"scores": {"R1": r1, "R2": 0.5, "R3": 0.75}}})
    assert [s["R1"] for s in truth_scores(tmp_path)] == [1.0, 0.25]
    assert summarise(truth_scores(tmp_path))[TOTAL]["value"] == pytest.approx((2.25 + 1.5) / 2)
    _card(tmp_path, 2, {"frames": 510})
    with pytest.raises(ValueError, match=r"episode-000002.*has no truth"):
        truth_scores(tmp_path)


def test_the_report_interval_covers_the_mean_near_its_nominal_rate():
    rng = np.random.default_rng(3)
    population = [{"R1": float(v), "R2": float(w), "R3": 0.5} for v, w in rng.uniform(0, 1, (200, 2))]
    coverage = interval_coverage(population, n=10, resamples=1000)
    assert 0.90 <= coverage["R1"] <= 0.98
    assert 0.90 <= coverage[TOTAL] <= 0.98
    assert coverage["R3"] == 0.0  # no spread, no interval: a report that states none covers nothing


def test_the_training_curve_counts_steps_from_the_log_frequency():
    curve = training_curve(TRAIN_LOG, log_freq=150)
    assert curve == [
        {"step": 150, "loss": 4.812, "update_s": 0.411, "data_s": 0.052},
        {"step": 300, "loss": 1.25, "update_s": 0.398, "data_s": 0.047},
    ]
