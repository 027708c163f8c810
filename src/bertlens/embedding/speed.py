"""Texts per second of embedders on the same texts: what `distill` and `recommend` report as speed."""

from __future__ import annotations

import statistics
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


def timing(embedder, texts: Sequence[str], singles: int = 20) -> tuple[float, float]:
    """(texts/s on `texts` in batches, best of two passes; median ms for one text alone, after a warm-up, over the
    first `singles` texts): the speed `recommend`'s latency step and a sweep's model prices report."""
    (rate,) = texts_per_second([embedder], texts)
    embedder.encode(texts[:1])
    single = []
    for text in texts[:singles]:
        start = time.perf_counter()
        embedder.encode([text])
        single.append(1000 * (time.perf_counter() - start))
    return rate, statistics.median(single)
