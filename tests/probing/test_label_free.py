"""The combined label-free score and the trust figures, on hand-made scores."""

import numpy as np
import pytest
from scipy.stats import spearmanr

from bertlens.metrics.bootstrap import bootstrap, paired_difference
from bertlens.probing.candidates import Candidate
from bertlens.probing.label_free import COMPONENTS, LabelFreeScores, combine, view_count
from bertlens.probing.label_trust import agreement, label_free_trust, settle


def test_combine_is_the_weighted_mean_of_oriented_rank_percentiles():
    components = {
        "effective_rank": np.array([[1.0], [3.0], [2.0]]),  # higher is better: candidate 1 best
        "anisotropy": np.array([[0.9], [0.5], [0.1]]),  # lower is better: candidate 2 best
    }
    got = combine(components, {"effective_rank": 1.0, "anisotropy": 3.0})[:, 0]
    # percentiles: erank (0, 1, .5); -anisotropy (0, .5, 1)
    assert np.allclose(got, [(0 + 0) / 4, (1 + 1.5) / 4, (0.5 + 3) / 4])
    components["anisotropy"][0, 0] = np.nan
    assert np.isnan(combine(components, {"effective_rank": 1.0, "anisotropy": 1.0})[0, 0])
    assert np.isfinite(combine(components, {"effective_rank": 1.0})[0, 0])  # a component not used does not matter


def test_view_count_is_a_tenth_between_64_and_500():
    assert view_count(30) == 30 and view_count(2000) == 200 and view_count(100000) == 500 and view_count(200) == 64


def _scores(free: np.ndarray, names: list[str]) -> LabelFreeScores:
    candidates = tuple(Candidate("mean", n, "single", (int(n[1:]),)) for n in names)
    components = {name: np.repeat(free[:, None], 3, axis=1) for name in COMPONENTS}
    return LabelFreeScores(candidates, components, np.repeat(free[:, None], 3, axis=1), {"effective_rank": 1.0})


def test_trust_figures_are_the_paired_bootstrap_of_pick_against_best_and_last():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 2, 400)
    accuracy = [0.55, 0.8, 0.7, 0.6]
    outputs = np.stack([np.where(rng.random(400) < a, gold, 1 - gold) for a in accuracy])  # [4, 400]
    names = ["L0", "L1", "L2", "L3"]
    test = bootstrap(outputs, gold, "accuracy", resamples=300)
    free = np.array([0.1, 0.2, 0.9, 0.3])  # picks L2
    trust = label_free_trust(
        _scores(free, names), [f"mean/{n}" for n in names], test, outputs, gold, "accuracy", "mean/L3", hidden_size=8
    )
    assert trust.pick == "mean/L2" and trust.candidates == 4
    best, last = trust.regrets
    assert best.reference == f"mean/L{test.best}"
    expected = paired_difference(outputs[[test.best, 2]], gold, "accuracy")
    assert (best.value, best.low, best.high) == pytest.approx(expected)
    assert last.value == pytest.approx((outputs[2] == gold).mean() - (outputs[3] == gold).mean())
    assert trust.pick_not_below_last == (last.high >= 0)
    assert trust.pick_within_best == bool(test.tied_with_best[2])
    combined = next(a for a in trust.agreements if a.score == "combined")
    assert combined.rho == pytest.approx(spearmanr(free, test.value).statistic)


def test_agreement_interval_contains_the_estimate_and_handles_undefined():
    rng = np.random.default_rng(1)
    labelled = rng.normal(size=30)
    a = agreement("x", labelled + rng.normal(scale=0.5, size=30), labelled, seed=0)
    assert a.low <= a.rho <= a.high and a.rho > 0.6
    free = labelled.copy()
    free[:28] = np.nan
    assert np.isnan(agreement("x", free, labelled, seed=0).rho)


def test_settle_counts_draws_within_the_best_and_skips_counts_beyond_the_pool():
    gold = np.arange(10) % 2
    outputs = np.stack([gold, 1 - gold])  # candidate 0 perfect, 1 always wrong
    test = bootstrap(outputs, gold, "accuracy", resamples=100)
    seen = []

    def choose(rows):
        seen.append(len(rows))
        return 0 if len(rows) >= 50 else 1

    out = settle(choose, np.arange(120), test, counts=(25, 50, 100, 200), repeats=3)
    assert [s.labels for s in out] == [25, 50, 100] and seen == [25] * 3 + [50] * 3 + [100] * 3
    assert [s.within_best for s in out] == [0.0, 1.0, 1.0] and out[0].mean_regret == pytest.approx(-1.0)


def test_the_last_layer_default_is_mean_pooling_else_another_pooler_else_none():
    from bertlens.probing.label_trust import last_layer_default

    assert last_layer_default(["cls/L6", "mean/L5", "mean/L6"], 6) == "mean/L6"
    assert last_layer_default(["cls/L2", "max/L6", "cls/L6"], 6) == "max/L6"
    assert last_layer_default(["mean/L1", "mean/L16"], 6) is None  # L16 is not L6


def test_without_a_last_layer_the_trust_has_only_the_regret_against_the_best():
    rng = np.random.default_rng(3)
    gold = rng.integers(0, 2, 200)
    outputs = np.stack([np.where(rng.random(200) < a, gold, 1 - gold) for a in (0.6, 0.8)])
    test = bootstrap(outputs, gold, "accuracy", resamples=100)
    names = ["L0", "L1"]
    trust = label_free_trust(
        _scores(np.array([0.9, 0.1]), names),
        [f"mean/{n}" for n in names],
        test,
        outputs,
        gold,
        "accuracy",
        None,
        hidden_size=8,
    )
    assert [r.against for r in trust.regrets] == ["best"] and trust.pick_not_below_last is None
    from bertlens.reports.sweep import trust_lines

    assert "last-layer" not in trust_lines(trust)[0] and "vs the best" in trust_lines(trust)[0]
