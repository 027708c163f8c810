"""Geometry diagnostics on data with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.metrics.geometry import (
    alignment,
    intra_sentence_similarity,
    mean_pair_cosine,
    random_pairs,
    rogue_dimensions,
    self_similarity,
    uniformity,
    variance_explained,
)


def test_isotropic_vs_cone():
    rng = np.random.default_rng(0)
    isotropic = rng.normal(size=(2000, 32))
    cone = isotropic + 4.0
    i, j = random_pairs(2000, 4000, rng)
    assert abs(mean_pair_cosine(isotropic, i, j)) < 0.02
    assert mean_pair_cosine(cone, i, j) > 0.9
    assert uniformity(isotropic, i, j) < uniformity(cone, i, j)


def test_rogue_dimension_is_found():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(1000, 16))
    x[:, 5] += 20.0
    i, j = random_pairs(1000, 3000, rng)
    (dim, share), *_ = rogue_dimensions(x, i, j)
    assert dim == 5 and share > 0.9


def test_variance_alignment_and_pairs_from_different_groups():
    rng = np.random.default_rng(2)
    x = np.c_[10 * rng.normal(size=500), rng.normal(size=(500, 4))]
    assert variance_explained(x, 1) > 0.9
    assert alignment(x, x) == pytest.approx(0.0)
    assert alignment(x, -x) == pytest.approx(4.0)
    groups = np.repeat(np.arange(50), 10)
    i, j = random_pairs(500, 1000, rng, groups)
    assert np.all(groups[i] != groups[j])


def test_self_and_intra_sentence_similarity():
    rng = np.random.default_rng(3)
    word = rng.normal(size=8)
    tokens = np.stack([word + 0.01 * rng.normal(size=8) for _ in range(6)] + [rng.normal(size=8) for _ in range(6)])
    types = np.array([7] * 6 + list(range(100, 106)))
    sentence = np.array([0, 1, 2, 3, 4, 5] + [0, 1, 2, 3, 4, 5])
    assert self_similarity(tokens, types, sentence, rng, min_contexts=5) > 0.99  # the same vector in every context
    same = np.ones((4, 8))
    assert intra_sentence_similarity(same, np.zeros(4, dtype=int)) == pytest.approx(1.0)
