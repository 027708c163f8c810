"""Features and scores of text pairs from their two vectors."""

from __future__ import annotations

import numpy as np


def pair_features(u: np.ndarray, v: np.ndarray | None, kind: str) -> np.ndarray:
    """Probe features of one text (u) or a pair (u, v) [n, D] -> [n, D']."""
    if v is None:
        return u
    if kind == "similarity":
        return np.concatenate([np.abs(u - v), u * v], axis=1)  # SentEval's STS features
    return np.concatenate([u, v, np.abs(u - v), u * v], axis=1)  # InferSent-style pair features


def row_cosine(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cosine of each row of u with the same row of v: [n]."""
    return (u * v).sum(1) / np.maximum(np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1), 1e-12)
