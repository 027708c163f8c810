"""Many pieces of one text -> one vector: the single aggregator for long texts.

Used by the Embedder (pieces' recipe vectors [C, D]) and by the feature bank (pieces' pooled
vectors of every layer x pooler [C, L+1, P, H]) alike, so both give the same numbers.
  mean      average of the pieces
  weighted  average weighted by each piece's content-token count
  max       element-wise maximum
  first     the first piece (what one-piece strategies such as head or tail produce)
"""

from __future__ import annotations

import numpy as np


def aggregate(
    values: np.ndarray, owner: np.ndarray, tokens: np.ndarray, order: np.ndarray, texts: int, how: str
) -> np.ndarray:
    """values [C, ...] of pieces owned by texts 0..texts-1 -> [texts, ...].

    mean/weighted accumulate in float64 (callers cast); max and first keep the values' dtype.
    """
    shape = (texts, *values.shape[1:])
    if how == "first":
        out = np.zeros(shape, dtype=values.dtype)
        first = order == 0
        out[owner[first]] = values[first]
        return out
    if how == "max":
        out = np.full(shape, -np.inf, dtype=values.dtype)
        np.maximum.at(out, owner, values)
        return out
    weights = tokens.astype(np.float64) if how == "weighted" else np.ones(len(owner))
    weights = np.maximum(weights, 1e-9)  # an empty text still gets its (special-tokens-only) piece
    broadcast = weights.reshape(-1, *([1] * (values.ndim - 1)))
    total = np.zeros(shape)
    np.add.at(total, owner, values * broadcast)
    norm = np.bincount(owner, weights=weights, minlength=texts).reshape(-1, *([1] * (values.ndim - 1)))
    return total / norm
