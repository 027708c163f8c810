"""A shorter width of a vector: the first dimensions, renormalised (Matryoshka-style), as `dimensions` serves it."""

from __future__ import annotations

import numpy as np


def truncate(vectors: np.ndarray, width: int) -> np.ndarray:
    """The first `width` dimensions of each row [n, D], renormalised to unit length: [n, width]."""
    cut = np.asarray(vectors, dtype=np.float32)[:, :width]
    return cut / np.maximum(np.linalg.norm(cut, axis=1, keepdims=True), 1e-12)
