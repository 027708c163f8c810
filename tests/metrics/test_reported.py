"""The figures reported beside a kind's main metric (metrics/reported.py), against scikit-learn."""

import numpy as np
import pytest
from sklearn.metrics import label_ranking_average_precision_score

from bertlens.metrics.reported import ranking_average_precision


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ranking_average_precision_equals_scikit_learns_with_ties_and_degenerate_texts(seed):
    rng = np.random.default_rng(seed)
    n, labels = 300, 7
    truth = rng.random((n, labels)) < 0.25
    truth[:5] = False  # no relevant label: 1 by convention
    truth[5:8] = True  # every label relevant: 1 as well
    scores = rng.integers(0, 4, size=(n, labels)).astype(np.float32)  # few values: many ties
    scores[n // 2 :] = rng.random((n - n // 2, labels))
    expected = label_ranking_average_precision_score(truth, scores)
    assert ranking_average_precision(truth, scores) == pytest.approx(expected, abs=1e-12)


def test_a_perfect_ranking_scores_one_and_a_reversed_one_less():
    truth = np.array([[True, False, False], [False, True, True]])
    assert ranking_average_precision(truth, truth.astype(float)) == 1.0
    assert ranking_average_precision(truth, 1.0 - truth) < 0.6
