"""Truncation to the first k dimensions and the loss the sweep writes into a recipe."""

import numpy as np
import pytest

from bertlens.metrics.bootstrap import spearman
from bertlens.metrics.geometry import row_cosine
from bertlens.probing.truncation import retrieval_loss, similarity_loss, widths_below
from bertlens.representation.dimensions import truncate


def test_truncate_keeps_the_first_dimensions_at_unit_length():
    x = np.arange(12, dtype=np.float32).reshape(2, 6) + 1
    cut = truncate(x, 4)
    assert cut.shape == (2, 4) and np.allclose(np.linalg.norm(cut, axis=1), 1)
    assert np.allclose(cut * np.linalg.norm(x[:, :4], axis=1, keepdims=True), x[:, :4])


def test_losses_are_full_minus_truncated_scores():
    rng = np.random.default_rng(0)
    u = rng.normal(size=(200, 64))
    v = u + rng.normal(scale=0.5, size=u.shape)
    v[:, 32:] = rng.normal(size=(200, 32))  # the second half carries nothing: cutting it helps
    gold = row_cosine(u, v) + rng.normal(scale=0.05, size=200)
    losses = dict(similarity_loss(u, v, gold))
    assert list(losses) == [16, 32] == list(widths_below(64))
    expected = spearman(row_cosine(u, v), gold) - spearman(row_cosine(u[:, :32], v[:, :32]), gold)
    assert losses[32] == pytest.approx(expected, abs=1e-6)
    docs = rng.normal(size=(50, 32))
    queries = docs[:5] + rng.normal(scale=0.1, size=(5, 32))
    judged = [{i: 1} for i in range(5)]
    assert dict(retrieval_loss(docs, queries, judged))[16] >= 0  # every query finds its document at full width
