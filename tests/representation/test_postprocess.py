"""Post-processing: whitening gives identity covariance, survives save/load, and fails clearly on too few texts."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.errors import BertlensError
from bertlens.representation.postprocess import PostProcessor, parse_steps


@pytest.fixture
def anisotropic():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(600, 12)) @ rng.normal(size=(12, 12)) * np.linspace(0.1, 5, 12)
    return base + 7.0  # a common offset: every vector in one cone


def test_whitened_fitting_vectors_have_identity_covariance(anisotropic):
    fitted = PostProcessor.fit(parse_steps("whiten"), anisotropic)
    z = fitted.transform(anisotropic).astype(np.float64)
    np.testing.assert_allclose(z.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(np.cov(z, rowvar=False, bias=True), np.eye(12), atol=1e-4)
    assert fitted.output_dim == 12
    reduced = PostProcessor.fit(parse_steps("whiten:4"), anisotropic)
    assert reduced.transform(anisotropic).shape == (600, 4)


def test_fit_on_a_apply_to_b_round_trips_through_a_file(anisotropic, tmp_path):
    a, b = anisotropic[:400], anisotropic[400:]
    fitted = PostProcessor.fit(parse_steps("center,whiten:8,normalize"), a)
    path = fitted.save(tmp_path / "p.safetensors")
    loaded = PostProcessor.load(path)
    assert loaded.name == "center,whiten:8,normalize" and loaded.fitted_on == 400
    np.testing.assert_array_equal(loaded.transform(b), fitted.transform(b))
    np.testing.assert_allclose(np.linalg.norm(loaded.transform(b), axis=1), 1, atol=1e-5)


def test_all_but_the_top_removes_the_dominant_directions(anisotropic):
    fitted = PostProcessor.fit(parse_steps("abtt:2"), anisotropic)
    z = fitted.transform(anisotropic).astype(np.float64)
    directions = fitted.arrays["0.directions"]
    np.testing.assert_allclose(z @ directions, 0, atol=1e-4)
    before = np.linalg.svd(anisotropic - anisotropic.mean(0), compute_uv=False)
    after = np.linalg.svd(z, compute_uv=False)
    np.testing.assert_allclose(after[:10], before[2:12], rtol=1e-4)  # the rest of the spectrum is untouched


def test_clear_errors(anisotropic, tmp_path):
    with pytest.raises(BertlensError, match="needs more than 12 fitting texts, got 10"):
        PostProcessor.fit(parse_steps("whiten"), anisotropic[:10])
    with pytest.raises(BertlensError, match="unknown post-processing step 'whitten'"):
        parse_steps("whitten")
    with pytest.raises(BertlensError, match="takes no argument"):
        parse_steps("normalize:3")
    fitted = PostProcessor.fit(parse_steps("center"), anisotropic)
    with pytest.raises(BertlensError, match="fitted on 12-dimensional vectors, got 5"):
        fitted.transform(anisotropic[:, :5])
    (tmp_path / "x.safetensors").write_bytes(b"not a file")
    with pytest.raises(BertlensError, match="not a readable safetensors file"):
        PostProcessor.load(tmp_path / "x.safetensors")


def test_a_learned_linear_step_applies_x_w_plus_b_and_survives_a_file(tmp_path):
    rng = np.random.default_rng(1)
    x, weight, bias = rng.normal(size=(20, 6)), rng.normal(size=(6, 3)), rng.normal(size=3)
    plain = PostProcessor.affine(weight, bias)
    np.testing.assert_allclose(plain.transform(x), x @ weight + bias, rtol=1e-5, atol=1e-5)
    assert (plain.dim, plain.output_dim, plain.name) == (6, 3, "linear")
    unit = PostProcessor.load(PostProcessor.affine(weight, bias, normalize=True).save(tmp_path / "p.safetensors"))
    expected = x @ weight + bias
    np.testing.assert_allclose(unit.transform(x), expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-6)
    assert unit.name == "linear,normalize"


def test_the_learned_step_cannot_be_fitted_from_vectors():
    with pytest.raises(BertlensError, match="learned by training"):
        parse_steps("center,linear")
