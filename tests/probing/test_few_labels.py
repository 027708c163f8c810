"""The few-label choice: the dual ridge equals the primal ridge it stands for, and it picks informative features."""

import numpy as np
import torch
from sklearn.model_selection import KFold

from bertlens.probing.few_labels import FEW_LABEL_ALPHA, FEW_LABEL_FOLDS, dual_ridge_accuracy


def _primal_accuracy(x: np.ndarray, y: np.ndarray, classes: int, seed: int) -> float:
    """The same ridge classifier solved in its D x D primal form with numpy (float64)."""
    correct = 0
    onehot = np.eye(classes)[y]
    for train, test in KFold(FEW_LABEL_FOLDS, shuffle=True, random_state=seed).split(x):
        mean, scale = x[train].mean(0), np.maximum(x[train].std(0, ddof=1), 1e-6)
        a, b = (x[train] - mean) / scale, (x[test] - mean) / scale
        target = onehot[train] - onehot[train].mean(0)
        w = np.linalg.solve(a.T @ a + FEW_LABEL_ALPHA * np.eye(x.shape[1]), a.T @ target)
        correct += ((b @ w).argmax(1) == y[test]).sum()
    return correct / len(y)


def test_dual_ridge_equals_the_primal_fit():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 60)
    x = rng.normal(size=(2, 60, 80)).astype(np.float32)
    x[0, :, :3] += 5.0 * np.eye(3)[y]  # candidate 0 carries the label, candidate 1 is noise
    got = dual_ridge_accuracy(torch.from_numpy(x), y, 3, seed=0)
    expected = [_primal_accuracy(x[c].astype(np.float64), y, 3, 0) for c in range(2)]
    assert np.allclose(got, expected, atol=1 / 60 + 1e-9)  # at most one row apart (float32 features)
    assert got[0] > 0.8 and got[1] < 0.6
