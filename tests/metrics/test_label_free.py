"""Label-free measures against their definitions computed another way (numpy SVD), and their limits."""

import numpy as np
import pytest

from bertlens.metrics.label_free import effective_rank, matrix_entropy, spectrum


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("shape", [(300, 40), (30, 64)])
def test_spectrum_is_the_squared_singular_values_of_the_unit_rows(shape):
    x = np.random.default_rng(0).normal(size=shape) * np.linspace(0.1, 3, shape[1])
    reference = np.linalg.svd(_unit(x), compute_uv=False) ** 2
    assert np.allclose(spectrum(x), reference, rtol=1e-4, atol=1e-5 * reference[0])


def test_effective_rank_matches_roy_vetterli_on_a_numpy_svd():
    x = np.random.default_rng(1).normal(size=(500, 32)) * np.linspace(0.2, 2, 32)
    sigma = np.linalg.svd(_unit(x), compute_uv=False)
    p = sigma / sigma.sum()
    assert effective_rank(spectrum(x)) == pytest.approx(np.exp(-(p * np.log(p)).sum()), rel=1e-6)


def test_effective_rank_limits_one_direction_and_isotropic():
    rng = np.random.default_rng(2)
    line = np.outer(rng.uniform(1, 2, 200), rng.normal(size=16))  # rank 1
    assert effective_rank(spectrum(line)) == pytest.approx(1.0, abs=1e-3)
    isotropic = rng.normal(size=(20000, 16))
    assert effective_rank(spectrum(isotropic)) == pytest.approx(16, rel=0.01)


def test_matrix_entropy_is_normalised_von_neumann_entropy():
    x = np.random.default_rng(3).normal(size=(100, 20)) + 3.0  # a cone: low entropy
    gram = _unit(x) @ _unit(x).T
    lam = np.linalg.eigvalsh(gram / np.trace(gram))
    lam = lam[lam > 1e-12]
    expected = -(lam * np.log(lam)).sum() / np.log(20)
    assert matrix_entropy(spectrum(x)) == pytest.approx(expected, rel=1e-6)
    isotropic = np.random.default_rng(4).normal(size=(20000, 20))
    assert matrix_entropy(spectrum(isotropic)) > 0.99 > 0.5 > matrix_entropy(spectrum(x))


def test_constant_vectors_have_no_defined_spectrum_measure():
    x = np.zeros((10, 4))
    assert np.isnan(effective_rank(spectrum(x))) and np.isnan(matrix_entropy(spectrum(x)))
