"""Features and scores of text pairs from their two vectors."""

from __future__ import annotations

import numpy as np

from bertlens.metrics.geometry import row_cosine  # noqa: F401 - pair scores live with pair features


def pair_features(u: np.ndarray, v: np.ndarray | None, kind: str) -> np.ndarray:
    """Probe features of one text (u) or a pair (u, v) [n, D] -> [n, D']."""
    if v is None:
        return u
    if kind == "similarity":
        return np.concatenate([np.abs(u - v), u * v], axis=1)  # SentEval's STS features
    return np.concatenate([u, v, np.abs(u - v), u * v], axis=1)  # InferSent-style pair features
