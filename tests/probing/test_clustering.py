import numpy as np

from bertlens.probing.clustering import subsamples, v_measures


def test_separated_clusters_score_one_and_noise_scores_near_zero():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 300)
    centres = rng.normal(size=(4, 16)) * 20
    separated = centres[labels] + rng.normal(size=(1200, 16))
    noise = rng.normal(size=(1200, 16))
    constant = np.ones((1200, 16))
    table = [separated, noise, constant]
    scores = v_measures(lambda i, rows: table[i][rows], 3, labels, seed=1)  # [3, B]
    assert np.allclose(scores[0], 1.0)
    assert np.all(scores[1] < 0.05)
    assert np.isnan(scores[2]).all()  # constant vectors: no clustering to score


def test_subsamples_are_seeded_and_shared():
    labels = np.arange(10000) % 7
    a, b = subsamples(labels, seed=3), subsamples(labels, seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert len(a) == 10 and len(a[0]) == 4000 and len(np.unique(a[0])) == 4000
