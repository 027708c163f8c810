"""The staged sweep's stopping rule: planned looks, the paired-gap rule, and coverage under repeated looks."""

import numpy as np
import pytest
from scipy.stats import norm

from bertlens.metrics.bootstrap import bootstrap
from bertlens.metrics.sequential import Rule, judge, look_confidence, looks_until_settled, settles, stage_sizes


def test_stage_sizes_double_and_end_on_every_row():
    assert stage_sizes(100_000) == (10_000, 20_000, 40_000, 100_000)
    assert stage_sizes(30_000) == (10_000, 20_000, 30_000)
    assert stage_sizes(20_000, 5000) == (5000, 10000, 20000)
    assert stage_sizes(10_000, 5000) == (5000, 10000)  # a look at 10,000 of 10,000 is the last one
    assert stage_sizes(7000, 5000) == (7000,)  # under 1.5 x the first stage: one look, every row
    with pytest.raises(ValueError):
        stage_sizes(0)


def test_look_confidence_spends_alpha_over_the_looks():
    assert look_confidence(1) == pytest.approx(0.95)
    assert look_confidence(5) == pytest.approx(0.99)


def _predictions(rng, accuracies, n, classes=4, shared=0.5):
    """[C, n] predictions and [n] gold where candidate c is right with probability accuracies[c] on every row, the
    candidates' errors correlated through a shared difficulty per row (as candidates of one bank are): right when
    sqrt(shared) z_row + sqrt(1 - shared) z_c,row < Phi^-1(p_c), a standard normal either way."""
    gold = rng.integers(0, classes, n)
    z = np.sqrt(shared) * rng.standard_normal(n)[None] + np.sqrt(1 - shared) * rng.standard_normal((len(accuracies), n))
    right = z < norm.ppf(np.asarray(accuracies))[:, None]  # [C, n]
    wrong = (gold + 1 + rng.integers(0, classes - 1, n)) % classes
    return np.where(right, gold[None], wrong[None]), gold


def test_settles_reads_the_paired_gap_to_the_pick():
    rng = np.random.default_rng(0)
    outputs, gold = _predictions(rng, [0.80, 0.60, 0.55], 4000)
    ok, gap, ahead = settles(outputs, gold, "accuracy", 0, np.ones(3, bool), tolerance=0.005, confidence=0.99,
                             resamples=300, seed=0)  # fmt: skip
    assert ok and gap < 0 and ahead == 1  # the others are far behind: their gap's upper end is below 0
    ok, gap, _ = settles(outputs, gold, "accuracy", 2, np.ones(3, bool), tolerance=0.005, confidence=0.99,
                         resamples=300, seed=0)  # fmt: skip
    assert not ok and gap > 0.2  # picking the worst: another is far ahead


def test_judge_settles_on_the_gap_alone():
    rng = np.random.default_rng(1)
    outputs, gold = _predictions(rng, [0.8, 0.5], 3000)
    rule = Rule(tolerance=0.005, confidence=0.99, resamples=200, seed=0)
    assert judge(outputs, gold, "accuracy", ["a", "b"], 0, 3000, rule).settled
    look = judge(outputs, gold, "accuracy", ["a", "b"], 1, 3000, rule)
    assert not look.settled and look.ahead == "a" and look.rows == 3000


def _staged_intervals(seed, accuracies, total, first, tolerance, resamples=200):
    """One synthetic staged run through looks_until_settled and judge: the intervals reported at the stop."""
    rng = np.random.default_rng(seed)
    outputs, gold = _predictions(rng, accuracies, total)
    planned = stage_sizes(total, first)
    confidence = look_confidence(len(planned))
    names = [str(c) for c in range(len(accuracies))]

    def look_at(rows):
        scores = (outputs[:, :rows] == gold[None, :rows]).mean(axis=1)
        rule = Rule(tolerance, confidence, resamples, seed)
        return judge(outputs[:, :rows], gold[:rows], "accuracy", names, int(np.argmax(scores)), rows, rule)

    looks = looks_until_settled(planned, look_at)
    rows = looks[-1].rows
    intervals = bootstrap(outputs[:, :rows], gold[:rows], "accuracy", resamples=resamples, seed=seed,
                          confidence=confidence)  # fmt: skip
    return looks, intervals


def test_intervals_keep_their_coverage_under_the_looks():
    """Known candidate means, 300 seeded runs: the intervals the staged rule reports at its stop cover the truth in
    at least 93% of runs (each candidate's, and the pick's). The candidates are close, so stops fall at every look.
    Measured: 98.7% and 97.7%; with unadjusted 95% intervals at every look the pick's fell to 90.0% (this test
    fails then)."""
    accuracies = np.array([0.62, 0.61, 0.60, 0.55])
    covered, pick_covered, stops = [], [], []
    for seed in range(300):
        looks, t = _staged_intervals(seed, accuracies, total=8000, first=500, tolerance=0.01)
        covered.append((t.low <= accuracies) & (accuracies <= t.high))
        pick_covered.append(covered[-1][t.best])
        stops.append(looks[-1].rows)
    assert np.mean(covered) >= 0.93 and np.mean(pick_covered) >= 0.93
    assert len(set(stops)) >= 3  # the rule did stop at different looks: the coverage is under optional stopping
