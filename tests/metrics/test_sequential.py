"""The staged sweep's stopping rule: planned looks, the paired-gap rule, and coverage under repeated looks."""

import numpy as np
import pytest
from scipy.stats import norm

from bertlens.metrics.bootstrap import bootstrap
from bertlens.metrics.sequential import (
    Look,
    Rule,
    judge,
    look_confidence,
    looks_until_settled,
    projected_gaps,
    stage_sizes,
)


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


def test_judge_reads_the_paired_gap_to_the_pick():
    rng = np.random.default_rng(0)
    outputs, gold = _predictions(rng, [0.80, 0.60, 0.55], 4000)
    rule = Rule(tolerance=0.005, confidence=0.99, resamples=300, seed=0)
    look = judge(outputs, gold, "accuracy", ["a", "b", "c"], 0, 4000, rule)
    assert look.settled and look.largest_gap < 0 and look.ahead == "b"  # the others are far behind
    look = judge(outputs, gold, "accuracy", ["a", "b", "c"], 2, 4000, rule)
    assert not look.settled and look.largest_gap > 0.2 and look.ahead == "a"  # picking the worst: another is ahead
    assert dict(look.gaps)["a"] == pytest.approx((outputs[0] == gold).mean() - (outputs[2] == gold).mean())


def test_projected_gaps_carry_each_trend_to_every_row():
    names = ["pick", "rising", "falling"]
    before = Look(1000, "pick", False, 0.0, "", gaps=(("pick", 0.0), ("rising", -0.05), ("falling", -0.01)))
    upper, gaps = np.array([0.0, -0.01, -0.02]), np.array([0.0, -0.02, -0.04])
    reach = projected_gaps(upper, gaps, names, 0, 2000, before, 8000)
    # rising gained 0.03 on the pick in one doubling, two doublings remain; falling is not extrapolated away
    assert reach == pytest.approx([0.0, -0.01 + 0.03 * 2, -0.02])
    assert np.isinf(projected_gaps(upper, gaps, names, 0, 2000, None, 8000)[1:]).all()  # no trend read yet
    assert projected_gaps(upper, gaps, names, 0, 8000, None, 8000) == pytest.approx(upper)  # every row read
    # the previous look's gaps are to its own pick: re-based on today's
    other = Look(1000, "rising", False, 0.0, "", gaps=(("pick", 0.05), ("rising", 0.0), ("falling", 0.04)))
    assert projected_gaps(upper, gaps, names, 0, 2000, other, 8000) == pytest.approx(reach)


def test_judge_settles_on_the_gap_alone_when_every_row_is_read():
    rng = np.random.default_rng(1)
    outputs, gold = _predictions(rng, [0.8, 0.5], 3000)
    rule = Rule(tolerance=0.005, confidence=0.99, resamples=200, seed=0)
    assert judge(outputs, gold, "accuracy", ["a", "b"], 0, 3000, rule).settled
    look = judge(outputs, gold, "accuracy", ["a", "b"], 1, 3000, rule)
    assert not look.settled and look.ahead == "a" and look.rows == 3000
    # rows remain and no earlier look: no trend to read, so not settled however far ahead the pick is
    assert not judge(outputs, gold, "accuracy", ["a", "b"], 0, 3000, Rule(0.005, 0.99, 200, 0, total=12000)).settled


def _learning_run(seed: int, total: int, first: int, total_known: bool) -> tuple[Look, ...]:
    """Staged looks at a task where 'wide' learns from more rows and 'narrow' does not: 'narrow' leads at the first
    looks, 'wide' on every row (accuracy 0.66 - 0.16 sqrt(first / rows) against 0.60: the curves cross at about
    7 x first rows). Each look draws its own out-of-fold outputs, as a stage's probes trained on its rows give."""
    rng = np.random.default_rng(seed)
    planned = stage_sizes(total, first)
    rule = Rule(0.005, look_confidence(len(planned)), 200, seed, total=total if total_known else 0)

    def look_at(rows, previous):
        outputs, gold = _predictions(rng, [0.60, 0.66 - 0.16 * np.sqrt(first / rows)], rows)
        pick = int(np.argmax((outputs == gold[None]).mean(axis=1)))
        return judge(outputs, gold, "accuracy", ["narrow", "wide"], pick, rows, rule, previous)

    return looks_until_settled(planned, look_at)


def test_a_candidate_that_learns_faster_keeps_the_sweep_reading():
    """Crossing learning curves (measured on the cloze at base size: mean/mean_all led at 20,000 rows, concat_last4
    won on 100,000 by 0.08): judged at the rows read only, the looks stop early on the candidate that loses on every
    row; with the gaps projected to every row they read on and pick the winner."""
    for seed in range(5):
        early = _learning_run(seed, 64_000, 2000, total_known=False)
        assert early[-1].settled and early[-1].rows < 64_000 and early[-1].pick == "narrow"
        looks = _learning_run(seed, 64_000, 2000, total_known=True)
        assert looks[-1].pick == "wide" and looks[-1].rows > early[-1].rows


def _staged_intervals(seed, accuracies, total, first, tolerance, resamples=200):
    """One synthetic staged run through looks_until_settled and judge: the intervals reported at the stop."""
    rng = np.random.default_rng(seed)
    outputs, gold = _predictions(rng, accuracies, total)
    planned = stage_sizes(total, first)
    confidence = look_confidence(len(planned))
    names = [str(c) for c in range(len(accuracies))]

    def look_at(rows, previous):
        scores = (outputs[:, :rows] == gold[None, :rows]).mean(axis=1)
        rule = Rule(tolerance, confidence, resamples, seed, total=total)
        pick = int(np.argmax(scores))
        return judge(outputs[:, :rows], gold[:rows], "accuracy", names, pick, rows, rule, previous)

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
