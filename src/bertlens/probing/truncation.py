"""What cutting vectors to their first k dimensions costs (Matryoshka-style truncation, renormalised).

TEI and infinity truncate when a client asks for fewer `dimensions`, whatever the model was trained for;
a model not trained for it (Kusupati et al. 2022, "Matryoshka Representation Learning") can lose much of
its quality. The sweep measures the loss of the recommended recipe at each power-of-two width below its
own, on the same held-out rows as its score, and writes it into the recipe; the server then answers only
the widths whose loss is measured and small.
"""

from __future__ import annotations

import numpy as np
import torch

from bertlens.metrics.bootstrap import spearman
from bertlens.metrics.geometry import row_cosine
from bertlens.metrics.ranking import DEPTH, RANKING_METRICS, ranking_metrics, top_k
from bertlens.representation.dimensions import truncate

WIDTHS = (16, 32, 64, 128, 256, 512, 1024, 2048)


def widths_below(width: int) -> tuple[int, ...]:
    return tuple(w for w in WIDTHS if w < width)


def similarity_loss(first: np.ndarray, second: np.ndarray, gold: np.ndarray) -> tuple[tuple[int, float], ...]:
    """(width, Spearman at full width - Spearman at that width) of the pair cosine, for each width below D."""
    full = float(spearman(row_cosine(first, second), gold))
    return tuple(
        (w, round(full - float(spearman(row_cosine(truncate(first, w), truncate(second, w)), gold)), 6))
        for w in widths_below(first.shape[1])
    )


def retrieval_loss(
    documents: np.ndarray, queries: np.ndarray, judgements: list[dict[int, int]]
) -> tuple[tuple[int, float], ...]:
    """(width, nDCG@10 at full width - nDCG@10 at that width) of cosine search, for each width below D."""

    def ndcg(docs: np.ndarray, qs: np.ndarray) -> float:
        _, ranked = top_k(
            torch.from_numpy(truncate(qs, qs.shape[1])), torch.from_numpy(truncate(docs, docs.shape[1])), DEPTH
        )
        return float(np.nanmean(ranking_metrics(ranked.numpy(), judgements)[RANKING_METRICS[0]]))

    full = ndcg(documents, queries)
    return tuple(
        (w, round(full - ndcg(truncate(documents, w), truncate(queries, w)), 6))
        for w in widths_below(documents.shape[1])
    )
