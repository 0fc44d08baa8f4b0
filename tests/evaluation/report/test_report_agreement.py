"""Judge-versus-human agreement equals hand-computed values (weighted kappa, accuracy, MAE, bias)."""

import numpy as np
import pytest

from evaluation.report.agreement import agreement, confusion_matrix, weighted_kappa

# Six labels. Confusion [judge][human] over levels 0, 0.5, 1: [[2,0,0],[0,1,1],[0,1,1]]; both marginals 1/3 each.
JUDGE = [0.0, 0.5, 1.0, 1.0, 0.5, 0.0]
HUMAN = [0.0, 1.0, 1.0, 0.5, 0.5, 0.0]


def test_confusion_matrix():
    assert confusion_matrix(JUDGE, HUMAN).tolist() == [[2, 0, 0], [0, 1, 1], [0, 1, 1]]


def test_quadratic_kappa_by_hand():
    # Observed weighted disagreement: two half-step cells, weight 0.25 each: 0.5 / 6 = 1/12.
    # Chance: every cell 1/9; the weights sum to 3 -> 1/3.  Kappa = 1 - (1/12) / (1/3) = 0.75.
    assert weighted_kappa(confusion_matrix(JUDGE, HUMAN)) == pytest.approx(0.75)


def test_linear_and_unweighted_kappa_by_hand():
    matrix = confusion_matrix(JUDGE, HUMAN)
    # Linear: observed 1/6, chance 4/9 -> 1 - 9/24 = 0.625.  Unweighted: p_o = 2/3, p_e = 1/3 -> 0.5.
    assert weighted_kappa(matrix, "linear") == pytest.approx(0.625)
    assert weighted_kappa(matrix, "none") == pytest.approx(0.5)
    with pytest.raises(ValueError, match="weights='cubic'"):
        weighted_kappa(matrix, "cubic")


def test_kappa_of_a_perfect_and_of_an_undefined_table():
    assert weighted_kappa(confusion_matrix([0.0, 0.5, 1.0], [0.0, 0.5, 1.0])) == pytest.approx(1.0)
    assert weighted_kappa(confusion_matrix([1.0, 1.0], [1.0, 1.0])) is None  # one level only: undefined
    assert weighted_kappa(np.zeros((3, 3), dtype=int)) is None


def test_kappa_is_zero_when_one_rater_never_varies():
    # The judge said 0 twice, people said 1 and 0.5: observed = chance disagreement.
    assert weighted_kappa(confusion_matrix([0.0, 0.0], [1.0, 0.5])) == pytest.approx(0.0)


def test_agreement_row():
    a = agreement("R1", JUDGE, HUMAN)
    assert (a.n, a.accuracy, a.kappa) == (6, pytest.approx(4 / 6), pytest.approx(0.75))
    assert (a.mae, a.bias) == (pytest.approx(1 / 6), pytest.approx(0.0))
    under = agreement("R3", [0.0, 0.0, 0.5], [0.5, 1.0, 0.5])
    assert (under.mae, under.bias, under.accuracy) == (pytest.approx(0.5), pytest.approx(-0.5), pytest.approx(1 / 3))
    total = agreement("total", [2.5, 1.0], [3.0, 1.0], ordinal=False)
    assert (total.kappa, total.confusion, total.bias) == (None, (), pytest.approx(-0.25))
    assert agreement("R2", [], []).accuracy is None


def test_agreement_rejects_off_scale_and_unpaired_labels():
    with pytest.raises(ValueError, match="not one of the levels"):
        agreement("R1", [0.3], [0.0])
    with pytest.raises(ValueError, match="2 judge labels but 1 human"):
        agreement("R1", [0.0, 1.0], [0.0])
