"""Late-interaction readings for the retrieval sweep (issue #52, first part): queries scored against documents by
MaxSim over their token vectors at one layer (representation/late_interaction.py), ranked and measured with the
same metrics as the pooled candidates.

A reading is a layer and the choices ColBERT (Khattab & Zaharia 2020) makes: special tokens kept or dropped,
the documents' punctuation kept or dropped, queries padded with mask tokens or not. MaxSim is scored over the whole
corpus, or, given the first stage's ranking (the best pooled reading's top 100), as a re-ranking of it: the way late
interaction is usually deployed, and what keeps a large corpus within reach.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bertlens.features.token_bank import TokenBank
from bertlens.metrics.ranking import DEPTH, RANKING_METRICS, ranking_metrics, top_k_of
from bertlens.progress import Progress, counting, silent
from bertlens.representation.late_interaction import PackedTokens, maxsim


@dataclass(frozen=True)
class TokenReading:
    """Tokens at `layer`, without pooling: the filters and the query augmentation late interaction is scored with."""

    layer: int
    drop_special: bool = False
    drop_punctuation: bool = False  # the documents' punctuation tokens (ColBERT's document filter)
    augment: int = 0  # queries padded with the mask token to this many tokens (0: as they are)

    @property
    def name(self) -> str:
        parts = [f"tokens/L{self.layer}"]
        parts += ["no-special"] if self.drop_special else []
        parts += ["no-punct"] if self.drop_punctuation else []
        parts += [f"q{self.augment}"] if self.augment else []
        return "+".join(parts)


def _document_tokens(bank: TokenBank, reading: TokenReading) -> PackedTokens:
    return bank.tokens(reading.layer, reading.drop_special, reading.drop_punctuation)


def _subset(tokens: PackedTokens, rows: np.ndarray) -> PackedTokens:
    """The token vectors of texts `rows`, packed in that order."""
    return PackedTokens.from_list([np.asarray(tokens.of(int(r))) for r in rows])


def ranked_by_maxsim(queries: PackedTokens, documents: PackedTokens, first_stage: np.ndarray | None) -> np.ndarray:
    """[Q, k] document rows, best first: MaxSim over the whole corpus (k = DEPTH), or each query's `first_stage`
    rows [Q, k] re-ranked by MaxSim (ties keep the first stage's order)."""
    if first_stage is None:
        return top_k_of(torch.from_numpy(maxsim(queries, documents)), DEPTH).numpy()
    out = np.empty_like(first_stage)
    for q, rows in enumerate(first_stage):
        query = PackedTokens.from_list([np.asarray(queries.of(q))])
        scores = maxsim(query, _subset(documents, rows))[0]  # [k]
        out[q] = rows[np.argsort(-scores, kind="stable")]
    return out


def score_token_readings(
    documents: TokenBank,
    queries: dict[int, TokenBank],
    readings: list[TokenReading],
    judgements: list[dict[int, int]],
    first_stage: np.ndarray | None = None,
    progress: Progress = silent,
) -> dict[str, np.ndarray]:
    """Each metric per reading and query {metric: [R, Q]}. `queries` maps an augmentation length (0: none) to the
    queries' token bank; judgements[q] maps a document row to its grade; `first_stage` [Q, k]: re-rank those rows
    instead of searching the corpus."""
    per_query = {m: np.full((len(readings), len(judgements)), np.nan) for m in RANKING_METRICS}
    for i, reading in enumerate(readings):
        progress(counting("late interaction: MaxSim", "readings"), i, len(readings))
        query_tokens = queries[reading.augment].tokens(reading.layer, drop_special=reading.drop_special)
        ranked = ranked_by_maxsim(query_tokens, _document_tokens(documents, reading), first_stage)
        for name, values in ranking_metrics(ranked, judgements).items():
            per_query[name][i] = values
    progress(counting("late interaction: MaxSim", "readings"), len(readings), len(readings))
    return per_query
