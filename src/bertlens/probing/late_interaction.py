"""Late-interaction readings for the retrieval sweep (issue #52, first part): queries scored against documents by
MaxSim over their token vectors at one layer (representation/late_interaction.py), ranked and measured with the
same metrics as the pooled candidates.

A reading is a layer and the choices ColBERT (Khattab & Zaharia 2020) makes: special tokens kept or dropped,
the documents' punctuation kept or dropped, queries padded with mask tokens or not, and token vectors reduced to 128
dimensions or not (a PCA fitted on the corpus' tokens, or a fixed random map: representation/token_projection.py).
MaxSim is scored over the whole
corpus, or, given the first stage's ranking (the best pooled reading's top 100), as a re-ranking of it: the way late
interaction is usually deployed, and what keeps a large corpus within reach.
"""

from __future__ import annotations

import numpy as np
import torch

from bertlens.features.token_bank import TokenBank
from bertlens.metrics.ranking import DEPTH, RANKING_METRICS, ranking_metrics, top_k_of
from bertlens.progress import Progress, counting, silent
from bertlens.representation.late_interaction import PackedTokens, TokenReading, maxsim
from bertlens.representation.token_projection import TokenProjection, make_projection


def _document_tokens(bank: TokenBank, reading: TokenReading) -> PackedTokens:
    return bank.tokens(reading.layer, reading.drop_special, reading.drop_punctuation)


def _subset(tokens: PackedTokens, rows: np.ndarray) -> PackedTokens:
    """The token vectors of texts `rows`, packed in that order."""
    return PackedTokens.from_list([np.asarray(tokens.of(int(r))) for r in rows])


def ranked_by_maxsim(queries: PackedTokens, documents: PackedTokens, first_stage: np.ndarray | None) -> np.ndarray:
    """[Q, k] document rows, best first: MaxSim over the whole corpus (k = DEPTH), or each query's `first_stage`
    rows [Q, k] re-ranked by MaxSim (ties: the lower document row first, as over the whole corpus)."""
    if first_stage is None:
        return top_k_of(torch.from_numpy(maxsim(queries, documents)), DEPTH).numpy()
    out = np.empty_like(first_stage)
    for q, rows in enumerate(first_stage):
        query = PackedTokens.from_list([np.asarray(queries.of(q))])
        scores = maxsim(query, _subset(documents, rows))[0]  # [k]
        out[q] = rows[np.lexsort((rows, -scores))]  # ties: the lower document row, as the full search ranks
    return out


def score_token_readings(
    documents: TokenBank,
    queries: dict[int, TokenBank],
    readings: list[TokenReading],
    judgements: list[dict[int, int]],
    first_stage: np.ndarray | None = None,
    progress: Progress = silent,
    seed: int = 0,
    document_rows: np.ndarray | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, TokenProjection]]:
    """Each metric per reading and query {metric: [R, Q]}, and the projection each reducing reading used (by name).
    `queries` maps an augmentation length (0: none) to the queries' token bank; judgements[q] maps a document row
    to its grade; `first_stage` [Q, k]: re-rank those rows instead of searching the corpus. A PCA is fitted on the
    documents' kept tokens (the corpus, never the judged queries), seeded like the random map. `document_rows`: the
    corpus row of each token-bank document, when the bank holds some of the corpus (the judgements' rows)."""
    per_query = {m: np.full((len(readings), len(judgements)), np.nan) for m in RANKING_METRICS}
    projections: dict[str, TokenProjection] = {}
    for i, reading in enumerate(readings):
        progress(counting("late interaction: MaxSim", "readings"), i, len(readings))
        query_tokens = queries[reading.augment].tokens(reading.layer, drop_special=reading.drop_special)
        document_tokens = _document_tokens(documents, reading)
        if reading.reduction:  # fitted on the corpus' tokens, applied to both sides
            projection = make_projection(reading.reduction, document_tokens.vectors, seed=seed)
            projections[reading.name] = projection
            query_tokens, document_tokens = projection.packed(query_tokens), projection.packed(document_tokens)
        ranked = ranked_by_maxsim(query_tokens, document_tokens, first_stage)  # [Q, k] token-bank rows
        ranked = ranked if document_rows is None else document_rows[ranked]
        for name, values in ranking_metrics(ranked, judgements).items():
            per_query[name][i] = values
    progress(counting("late interaction: MaxSim", "readings"), len(readings), len(readings))
    return per_query, projections
