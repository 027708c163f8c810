"""What a fidelity gate judged on held-out texts says of other texts: a bounded share under its minimum."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from bertlens.embedding.export_record import measure
from bertlens.embedding.gate import Gate, share_below_bound, vouches_for


@pytest.mark.parametrize(("judged", "below"), [(150, 0), (150, 1), (32, 3), (1000, 9), (7, 0)])
def test_the_bound_is_clopper_pearsons_one_sided_upper_end(judged, below):
    # a two-sided 90% exact interval's upper end is the one-sided 95% one
    reference = binomtest(below, judged).proportion_ci(confidence_level=0.90, method="exact").high
    assert share_below_bound(judged, below) == pytest.approx(reference, rel=1e-9)


def test_the_bound_covers_the_true_share_in_at_least_95_percent_of_draws():
    rng = np.random.default_rng(0)
    share, judged = 0.01, 150
    below = rng.binomial(judged, share, size=4000)
    covered = np.mean([share <= share_below_bound(judged, int(b)) for b in below])
    assert covered >= 0.95
    assert share_below_bound(judged, judged) == 1.0


def test_the_record_says_how_many_fell_under_and_what_that_bounds():
    reference = np.eye(4, dtype=np.float32)
    got = reference.copy()
    got[0, 1] = 0.3  # cosine 0.958 for the first row only
    fidelity = measure(got, reference, floor=0.98)
    assert fidelity.below_floor == 1 and measure(got, reference).below_floor is None
    said = vouches_for(Gate(), 150, 0)
    assert "0 of the 150 judging texts" in said and "at most 2.0%" in said and "random sample" in said
