import numpy as np
import pytest
from scipy.stats import spearmanr

from bertlens.metrics.bootstrap import _pearson, _resample_ranks, bootstrap, spearman


def test_resampled_spearman_equals_scipy_on_the_materialised_resample():
    rng = np.random.default_rng(0)
    gold = np.round(rng.uniform(0, 5, 300))  # many ties, like STS-B
    scores = gold + rng.normal(size=300)
    scores[:20] = scores[20]  # ties in the scores too
    for _ in range(5):
        idx = rng.integers(0, 300, 300)
        counts = np.bincount(idx, minlength=300)[None].astype(float)
        ours = _pearson(_resample_ranks(scores, counts), _resample_ranks(gold, counts), counts)[0]
        assert ours == pytest.approx(spearmanr(scores[idx], gold[idx]).statistic, abs=1e-10)


def test_spearman_matches_scipy_and_constant_rows_are_nan():
    rng = np.random.default_rng(1)
    gold = rng.normal(size=50)
    scores = np.stack([gold + rng.normal(size=50), np.ones(50)])
    rho = spearman(scores, gold)
    assert rho[0] == pytest.approx(spearmanr(scores[0], gold).statistic)
    assert np.isnan(rho[1])


def test_accuracy_intervals_ties_and_determinism():
    rng = np.random.default_rng(2)
    gold = rng.integers(0, 2, 2000)
    good = np.where(rng.random(2000) < 0.9, gold, 1 - gold)
    almost = np.where(rng.random(2000) < 0.01, 1 - good, good)  # a near copy of the best
    bad = np.where(rng.random(2000) < 0.6, gold, 1 - gold)
    outputs = np.stack([bad, good, almost])
    a = bootstrap(outputs, gold, "accuracy", resamples=500, seed=7)
    b = bootstrap(outputs, gold, "accuracy", resamples=500, seed=7)
    assert a.best == 1 and a.tied_with_best.tolist() == [False, True, a.tied_with_best[2]]
    assert np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high)
    assert (a.low <= a.value).all() and (a.value <= a.high).all()
    assert a.value[1] == pytest.approx((good == gold).mean())


def test_constant_candidate_never_wins_and_is_not_tied():
    rng = np.random.default_rng(3)
    gold = rng.normal(size=100)
    outputs = np.stack([np.zeros(100), gold + rng.normal(size=100)])
    result = bootstrap(outputs, gold, "spearman", resamples=200)
    assert result.best == 1 and not result.tied_with_best[0] and np.isnan(result.value[0])


def test_grouped_bootstrap_resamples_whole_groups():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 2, 60)
    outputs = np.stack([gold, np.where(rng.random(60) < 0.3, 1 - gold, gold)])  # [2, n]
    groups = np.repeat(np.arange(12), 5)
    grouped = bootstrap(outputs, gold, "accuracy", resamples=300, seed=1, groups=groups)
    np.testing.assert_allclose(grouped.value, [1.0, (outputs[1] == gold).mean()])
    # the same resamples materialised: draw groups, pool their examples, score them
    draw = np.random.default_rng(1)
    samples = []
    for _ in range(300):
        picked = draw.integers(0, 12, 12)
        counts = np.bincount(picked, minlength=12)
        rows = np.concatenate([np.repeat(np.flatnonzero(groups == g), c) for g, c in enumerate(counts)])
        samples.append((outputs[1, rows] == gold[rows]).mean())
    assert grouped.low[1] == pytest.approx(np.percentile(samples, 2.5))
    assert grouped.high[1] == pytest.approx(np.percentile(samples, 97.5))


def test_singleton_groups_equal_the_plain_bootstrap():
    rng = np.random.default_rng(2)
    gold = rng.integers(0, 3, 80)
    outputs = rng.integers(0, 3, (3, 80))
    plain = bootstrap(outputs, gold, "accuracy", resamples=200, seed=3)
    grouped = bootstrap(outputs, gold, "accuracy", resamples=200, seed=3, groups=np.arange(80))
    np.testing.assert_allclose(plain.low, grouped.low)
    np.testing.assert_allclose(plain.high, grouped.high)


def test_a_t_interval_over_two_seeds_stays_inside_the_metrics_range():
    from bertlens.metrics.intervals import METRIC_RANGES, t_interval

    mean, low, high = t_interval(np.array([0.45, 0.535]))  # the case recommend printed as [-0.1453, 1.1253]
    assert low < 0 and high > 1  # Student-t over two seeds: wider than the metric
    cut = t_interval(np.array([0.45, 0.535]), METRIC_RANGES["accuracy"])
    assert cut == (mean, 0.0, 1.0)
    assert (
        t_interval(np.array([0.8, 0.81, 0.82]), METRIC_RANGES["accuracy"])[1:]
        == t_interval(np.array([0.8, 0.81, 0.82]))[1:]
    )


def test_an_unknown_metric_and_too_few_resamples_are_refused():
    from bertlens.errors import BertlensError
    from bertlens.metrics.bootstrap import bootstrap

    with pytest.raises(ValueError, match="no interval for metric 'f1'"):
        bootstrap(np.zeros((2, 10)), np.zeros(10), "f1")
    with pytest.raises(BertlensError, match="at least 20"):
        bootstrap(np.zeros((2, 10)), np.zeros(10), "accuracy", resamples=5)


def test_micro_f1_resamples_equal_sklearn_on_the_materialised_resample():
    from sklearn.metrics import f1_score

    from bertlens.metrics.bootstrap import _draws, _value_and_samples

    rng = np.random.default_rng(3)
    gold = rng.random((60, 5)) < 0.3
    predicted = rng.random((2, 60, 5)) < 0.35
    value, samples = _value_and_samples(predicted, gold, "micro_f1", 50, 7)
    assert np.allclose(value, [f1_score(gold, p, average="micro") for p in predicted])
    counts = _draws(60, 50, 7)  # the same draws
    rows = np.repeat(np.arange(60), counts[4].astype(int))
    assert np.isclose(samples[1, 4], f1_score(gold[rows], predicted[1][rows], average="micro"))
