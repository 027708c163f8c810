"""Token projections: a seeded random orthonormal map and a PCA fitted on the corpus' tokens, saved and loaded as
safetensors; what is not one is refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA

from bertlens.errors import BertlensError
from bertlens.representation.token_projection import (
    TokenProjection,
    fit_pca,
    make_projection,
    random_projection,
)


def test_the_random_map_is_orthonormal_seeded_and_keeps_cosines_near():
    a, b = random_projection(64, 16, seed=3), random_projection(64, 16, seed=3)
    np.testing.assert_array_equal(a.components, b.components)
    np.testing.assert_allclose(a.components.T @ a.components, np.eye(16), atol=1e-5)
    assert not np.array_equal(a.components, random_projection(64, 16, seed=4).components)


def test_pca_is_sklearns_on_the_tokens_and_centres_them():
    x = np.random.default_rng(0).standard_normal((500, 24)).astype(np.float32) * np.linspace(0.1, 3, 24)
    projection = fit_pca(x, 6, seed=0)
    reference = PCA(n_components=6, svd_solver="full").fit(x)
    got = projection.apply(x)  # [500, 6]
    expected = reference.transform(x)
    for j in range(6):  # a component's sign is arbitrary
        assert min(np.abs(got[:, j] - expected[:, j]).max(), np.abs(got[:, j] + expected[:, j]).max()) < 1e-3
    np.testing.assert_allclose(got.mean(axis=0), 0, atol=1e-4)


def test_a_projection_round_trips_and_a_foreign_file_is_one_line(tmp_path):
    projection = make_projection("pca", np.random.default_rng(1).standard_normal((200, 32)), dim=8)
    loaded = TokenProjection.load(projection.save(tmp_path / "p.safetensors"))
    np.testing.assert_array_equal(loaded.components, projection.components)
    assert loaded.kind == "pca" and loaded.dim == 8 and loaded.input_dim == 32
    (tmp_path / "bad.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(BertlensError, match="not a readable safetensors file"):
        TokenProjection.load(tmp_path / "bad.safetensors")
    with pytest.raises(BertlensError, match="takes 32-dimensional vectors, got 5"):
        loaded.apply(np.zeros((2, 5), dtype=np.float32))
    with pytest.raises(BertlensError, match="unknown token reduction 'svd'"):
        make_projection("svd", np.zeros((10, 4)))
