"""Layer-wise probing: one linear probe per layer plus a learned ScalarMix, trained as one batch.

For each layer l the probe is an L2 logistic regression on that layer's vectors, with C
chosen on dev. The ScalarMix candidate learns softmax weights s over all layers on a
seeded sample of training rows (probe trained jointly), then its mixed vector is probed
like any layer. Its centre of gravity E_s[l] = sum_l l * s_l is the expected layer that
Tenney et al. (2019, "BERT rediscovers the classical NLP pipeline") use to say where a
task is solved.

Control tasks (Hewitt & Liang 2019): the same probe (same layer, same chosen C) trained on
labels that a word type gets at random; selectivity = task accuracy - control accuracy.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from bertlens.metrics.bootstrap import bootstrap
from bertlens.probing.scalar_mix_fit import fit_classification_mix
from bertlens.probing.selection import C_GRID, logistic_on_dev
from bertlens.representation.mixers import mix_pooled, softmax

DEFAULT_STRENGTHS = C_GRID[1:]  # C = 0.01 left out: the published linguistic figures used this grid (a third less time)

MIX_SAMPLE = 20000  # training rows used to learn the ScalarMix weights


@dataclass(frozen=True)
class LayerFeatures:
    """Per-layer vectors of train, dev and test rows (in that order) in one layer-major array.

    stacked: [L+2, n_train + n_dev + n_test, H] float32. The last slot is scratch space that
    `probe_layers` fills with the ScalarMix candidate, so the batched probe reads one array
    and nothing the size of the features is copied (token tasks hold ~250k words x layers).
    """

    stacked: np.ndarray
    n_train: int
    n_dev: int

    @classmethod
    def allocate(cls, layers: int, sizes: tuple[int, int, int], width: int) -> LayerFeatures:
        return cls(np.zeros((layers + 1, sum(sizes), width), dtype=np.float32), sizes[0], sizes[1])

    @classmethod
    def from_splits(cls, train: np.ndarray, dev: np.ndarray, test: np.ndarray) -> LayerFeatures:
        """From three [L+1, n, H] arrays."""
        features = cls.allocate(train.shape[0], (train.shape[1], dev.shape[1], test.shape[1]), train.shape[2])
        features.stacked[:-1] = np.concatenate([train, dev, test], axis=1)
        return features

    @property
    def num_layers(self) -> int:
        return self.stacked.shape[0] - 2

    @property
    def train(self) -> np.ndarray:
        """[L+1, n_train, H] view."""
        return self.stacked[:-1, : self.n_train]

    @property
    def test(self) -> np.ndarray:
        """[L+1, n_test, H] view."""
        return self.stacked[:-1, self.n_train + self.n_dev :]


@dataclass(frozen=True)
class LayerwiseResult:
    """Test accuracy per layer and for the ScalarMix, with 95% bootstrap intervals."""

    accuracy: list[float]  # [L+1]
    low: list[float]
    high: list[float]
    tied_with_best: list[bool]  # statistically tied with the layer best on test (paired bootstrap)
    dev_accuracy: list[float]
    strength: list[float]  # chosen C per layer (the ScalarMix's last)
    best_layer: int  # chosen on dev accuracy (ties: the lower layer); its test score is accuracy[best_layer]
    mix_weights: list[float]  # softmax weights s_l, [L+1]
    mix_accuracy: float
    mix_low: float
    mix_high: float
    centre_of_gravity: float
    n_test: int
    control_accuracy: list[float] | None = None  # [L+1], token tasks
    selectivity: list[float] | None = None  # [L+1]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> LayerwiseResult:
        return cls(**data)


def centre_of_gravity(weights: np.ndarray) -> float:
    """Expected layer under softmax-normalised mix weights."""
    return float(np.dot(np.arange(len(weights)), weights))


def probe_layers(
    features: LayerFeatures,
    y_train: np.ndarray,
    y_dev: np.ndarray,
    y_test: np.ndarray,
    *,
    strengths: tuple[float, ...] = DEFAULT_STRENGTHS,
    seed: int = 0,
    resamples: int = 1000,
    test_groups: np.ndarray | None = None,
    control: tuple[np.ndarray, np.ndarray] | None = None,
) -> LayerwiseResult:
    """Probe every layer and a ScalarMix; `control` = (control train labels, control test labels)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    n_train = features.n_train
    sample = np.sort(rng.choice(n_train, min(n_train, MIX_SAMPLE), replace=False))
    raw = fit_classification_mix(np.ascontiguousarray(features.train[:, sample].transpose(1, 0, 2)), y_train[sample])
    mix = softmax(raw).astype(np.float64)  # [L+1]
    mix_pooled(features.stacked[:-1], raw, out=features.stacked[-1])  # the scratch slot: sum_l s_l * layer_l, in place
    candidates = torch.from_numpy(features.stacked)  # [L+2, n_all, H], no copy
    selected = logistic_on_dev(candidates, features.n_train, features.n_dev, y_train, y_dev, strengths)
    chosen = selected.chosen  # [L+2]
    outputs = selected.predictions  # [L+2, n_test]
    intervals = bootstrap(outputs[:-1], y_test, "accuracy", resamples=resamples, seed=seed, groups=test_groups)
    mixed = bootstrap(outputs[-1:], y_test, "accuracy", resamples=resamples, seed=seed, groups=test_groups)
    control_acc = selectivity = None
    if control is not None:
        chosen_c = np.array([strengths[i] for i in chosen])  # [L+2]: the C each slot chose on the real task
        control_fit = logistic_on_dev(
            candidates, features.n_train, features.n_dev, control[0], y_dev, strengths, candidate_strengths=chosen_c
        )  # one strength per slot: nothing to choose
        control_acc = (control_fit.predictions[:-1] == control[1]).mean(axis=-1)  # [L+1] at the task's chosen C
        selectivity = intervals.value - control_acc
    return LayerwiseResult(
        accuracy=intervals.value.tolist(),
        low=intervals.low.tolist(),
        high=intervals.high.tolist(),
        tied_with_best=intervals.tied_with_best.tolist(),
        dev_accuracy=selected.dev_accuracy[:-1].tolist(),
        strength=[strengths[i] for i in chosen],
        best_layer=int(np.argmax(selected.dev_accuracy[:-1])),
        mix_weights=mix.tolist(),
        mix_accuracy=float(mixed.value[0]),
        mix_low=float(mixed.low[0]),
        mix_high=float(mixed.high[0]),
        centre_of_gravity=centre_of_gravity(mix),
        n_test=len(y_test),
        control_accuracy=None if control_acc is None else control_acc.tolist(),
        selectivity=None if selectivity is None else selectivity.tolist(),
    )
