"""Linear CKA: identity, invariances, and sensitivity to real change."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ortho_group

from bertlens.metrics.cka import linear_cka


@pytest.fixture
def x():
    return np.random.default_rng(0).normal(size=(200, 16)) @ np.diag(np.linspace(0.2, 3, 16))


def test_self_similarity_is_one(x):
    assert linear_cka(x, x) == pytest.approx(1.0)


def test_invariant_to_orthogonal_transforms_and_isotropic_scaling(x):
    q = ortho_group.rvs(16, random_state=1)
    assert linear_cka(x, x @ q) == pytest.approx(1.0)
    assert linear_cka(x, 7.5 * x) == pytest.approx(1.0)
    assert linear_cka(x, 0.3 * x @ q + 4.0) == pytest.approx(1.0)  # column offsets are centred away


def test_not_invariant_to_anisotropic_scaling_and_drops_for_unrelated_data(x):
    stretched = x * np.r_[np.ones(8), 10 * np.ones(8)]
    assert linear_cka(x, stretched) < 0.99
    noise = np.random.default_rng(2).normal(size=x.shape)
    assert linear_cka(x, noise) < 0.2


def test_symmetric_and_needs_same_rows(x):
    y = np.tanh(x[:, :10])
    assert linear_cka(x, y) == pytest.approx(linear_cka(y, x))
    with pytest.raises(ValueError, match="same examples"):
        linear_cka(x, x[:10])
