"""Text augmentations for label-free measures: a view of a text that should mean the same thing."""

from __future__ import annotations

import numpy as np

WORD_DROPOUT = 0.1  # share of words deleted (EDA's random deletion rate; Wei & Zou 2019)


def word_dropout(texts: list[str], rate: float = WORD_DROPOUT, seed: int = 0) -> list[str]:
    """Each text with every word deleted with probability `rate` (seeded); at least one word is kept."""
    rng = np.random.default_rng(seed)
    out = []
    for text in texts:
        words = text.split()
        keep = rng.random(len(words)) >= rate
        if words and not keep.any():
            keep[rng.integers(len(words))] = True
        out.append(" ".join(w for w, k in zip(words, keep) if k))
    return out
