"""Texts per second of embedders on the same texts: what `distill` and `recommend` report as speed."""

from __future__ import annotations

import time
from collections.abc import Sequence


def texts_per_second(embedders: Sequence, texts: Sequence[str], rounds: int = 2) -> list[float]:
    """Texts/s of each embedder (anything with `encode(texts)`), alternating, best of `rounds` after one warm-up
    batch each; the best of two full rounds also absorbs the kernel set-up the first batches of a shape pay."""
    for embedder in embedders:
        embedder.encode(texts[:16])
    best = [0.0] * len(embedders)
    for _ in range(rounds):
        for i, embedder in enumerate(embedders):
            start = time.perf_counter()
            embedder.encode(texts)
            best[i] = max(best[i], len(texts) / (time.perf_counter() - start))
    return best
