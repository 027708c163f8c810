"""Learning ScalarMix weights: the closed-form standardisation and what the mix learns."""

import numpy as np
import torch

from bertlens.probing.scalar_mix_fit import fit_classification_mix, layer_covariance, mixed_std
from bertlens.representation.mixers import mix_probabilities


def test_mixed_std_from_layer_covariance_equals_the_std_of_the_mixed_vectors():
    x = torch.randn(300, 5, 12, dtype=torch.float64) * torch.linspace(0.5, 3.0, 12, dtype=torch.float64)
    p = mix_probabilities(torch.randn(5, dtype=torch.float64))
    mixed = torch.einsum("nkh,k->nh", x, p)  # [n, H]
    torch.testing.assert_close(mixed_std(layer_covariance(x), p), mixed.std(dim=0))


def test_the_mix_weights_the_layer_that_carries_the_labels():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 600)
    layers = rng.normal(size=(600, 4, 16)).astype(np.float32)
    layers[:, 2, :4] += 3.0 * np.eye(4, dtype=np.float32)[labels]  # only layer 2 separates the classes
    weights = fit_classification_mix(layers, labels)
    assert int(np.argmax(weights)) == 2
