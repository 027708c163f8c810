"""Length-bucketed batching: pure functions over token counts."""

from __future__ import annotations

import numpy as np


def length_batches(lengths: np.ndarray, max_batch: int, max_tokens: int) -> list[np.ndarray]:
    """Group row indices so each batch holds texts of similar length (little padding).

    Longest first, so a batch that does not fit in memory fails at once, not at the end.
    A batch stops growing at `max_batch` rows or when rows x longest length passes `max_tokens`.
    """
    if max_batch < 1 or max_tokens < 1:
        raise ValueError("max_batch and max_tokens must be positive")
    order = np.argsort(-np.asarray(lengths), kind="stable")  # [N]
    batches: list[np.ndarray] = []
    start = 0
    while start < len(order):
        longest = int(lengths[order[start]])
        size = max(1, min(max_batch, max_tokens // max(longest, 1)))
        batches.append(order[start : start + size])
        start += size
    return batches
