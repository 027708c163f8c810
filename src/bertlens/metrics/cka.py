"""Linear centred kernel alignment (Kornblith et al. 2019, "Similarity of neural network
representations revisited"):

    CKA(X, Y) = ||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F),  X, Y column-centred [n, d]

1 for identical representations; invariant to orthogonal transforms and isotropic scaling of
either side, so it measures how much a layer's geometry moved, not its coordinates.
"""

from __future__ import annotations

import numpy as np


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """x [n, d1], y [n, d2] (same n examples, in the same order)."""
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"CKA needs the same examples on both sides, got {x.shape[0]} and {y.shape[0]} rows")
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x = x - x.mean(axis=0)
    y = y - y.mean(axis=0)
    cross = np.linalg.norm(y.T @ x) ** 2
    norms = np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y)
    return float(cross / norms) if norms > 0 else float("nan")
