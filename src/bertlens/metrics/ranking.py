"""Exact top-k search and per-query ranking metrics, as trec_eval defines them.

- nDCG@10: DCG = sum over the top 10 of grade / log2(rank + 1), divided by the DCG of the ideal
  ordering of the judged grades (Jarvelin & Kekalainen 2002; trec_eval's `ndcg_cut` uses the grade
  itself as gain, so do we).
- MRR@10: 1 / rank of the first relevant document within the top 10, else 0.
- recall@100: relevant documents in the top 100 / relevant documents judged.
- MAP@100: mean over the judged relevant documents of precision at each one's rank (0 when not
  in the top 100); trec_eval's `map_cut_100`.
A document is relevant when its grade is 1 or more (trec_eval's default relevance level).
"""

from __future__ import annotations

import numpy as np
import torch

RANKING_METRICS = ("ndcg@10", "mrr@10", "recall@100", "map@100")
DEPTH = 100  # the deepest cut any metric looks at
DOC_BLOCK = 16384  # documents per block of the search: memory is query block x doc block, not queries x corpus
QUERY_BLOCK = 1024


def top_k(
    queries: torch.Tensor, documents: torch.Tensor, k: int = DEPTH, doc_block: int = DOC_BLOCK
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact top-k by inner product: (scores [Q, k], document rows [Q, k]), best first.

    queries [Q, D] and documents [N, D] (normalise them first for cosine). The scores are computed
    a block of queries x a block of documents at a time and merged into a running top-k, so memory
    is bounded by the blocks, not by Q x N. Equal scores rank the lower document row first.
    """
    k = min(k, len(documents))
    best_scores, best_rows = [], []
    for q in range(0, len(queries), QUERY_BLOCK):
        block = queries[q : q + QUERY_BLOCK]  # [q, D]
        scores = torch.full((len(block), 0), -torch.inf, dtype=torch.float32)
        rows = torch.zeros((len(block), 0), dtype=torch.int64)
        for start in range(0, len(documents), doc_block):
            part = block @ documents[start : start + doc_block].T  # [q, d]
            merged = torch.cat([scores, part.float()], dim=1)  # [q, k + d]
            merged_rows = torch.cat(
                [rows, torch.arange(start, start + part.shape[1]).expand(len(block), -1)], dim=1
            )  # [q, k + d]
            order = _stable_top(merged, merged_rows, k)  # [q, k]
            scores, rows = merged.gather(1, order), merged_rows.gather(1, order)
        best_scores.append(scores)
        best_rows.append(rows)
    return torch.cat(best_scores), torch.cat(best_rows)


def top_k_maxsim(
    queries: torch.Tensor,
    pieces: torch.Tensor,
    owner: torch.Tensor,
    documents: int,
    k: int = DEPTH,
    piece_block: int = DOC_BLOCK,
    query_block: int = 128,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact top-k documents when a document scores its best piece (MaxP; Dai & Callan 2019): queries [Q, D],
    pieces [P, D] with owner [P] (the document row of each). Memory is a query block x (a piece block + the
    documents), never queries x pieces."""
    k = min(k, documents)
    best_scores, best_rows = [], []
    for q in range(0, len(queries), query_block):
        block = queries[q : q + query_block]  # [q, D]
        per_doc = torch.full((len(block), documents), -torch.inf)  # [q, N]
        for start in range(0, len(pieces), piece_block):
            part = (block @ pieces[start : start + piece_block].T).float()  # [q, p]
            index = owner[start : start + piece_block].expand(len(block), -1)  # [q, p]
            per_doc.scatter_reduce_(1, index, part, reduce="amax")
        rows = torch.arange(documents).expand(len(block), -1)  # [q, N]
        order = _stable_top(per_doc, rows, k)  # [q, k]
        best_scores.append(per_doc.gather(1, order))
        best_rows.append(order)
    return torch.cat(best_scores), torch.cat(best_rows)


def top_k_of(scores: torch.Tensor, k: int = DEPTH) -> torch.Tensor:
    """The k best document rows per query [Q, k] of a full score matrix [Q, N], best first; equal scores rank the
    lower document row first (as top_k)."""
    return _stable_top(scores, torch.arange(scores.shape[1]).expand(scores.shape[0], -1), k)


def _stable_top(scores: torch.Tensor, rows: torch.Tensor, k: int) -> torch.Tensor:
    """Column indices of the k best scores per row [q, k], best first; equal scores by lower document row.

    torch.topk finds the set (10x faster than sorting); only when scores tie at the k-th place, where topk may
    pick any of them, does a full stable sort decide."""
    k = min(k, scores.shape[1])
    top = scores.topk(k, dim=1)
    if int((scores >= top.values[:, -1:]).sum(dim=1).max()) > k:  # a tie across the cut: sort everything
        order = torch.argsort(rows, dim=1)  # [q, m] document rows ascending
        ranked = torch.argsort(scores.gather(1, order), dim=1, descending=True, stable=True)[:, :k]  # [q, k]
        return order.gather(1, ranked)
    chosen = top.indices.gather(1, torch.argsort(rows.gather(1, top.indices), dim=1))  # [q, k] by document row
    return chosen.gather(1, torch.argsort(scores.gather(1, chosen), dim=1, descending=True, stable=True))


def ranking_metrics(ranked: np.ndarray, judgements: list[dict[int, int]]) -> dict[str, np.ndarray]:
    """Per-query metrics {name: [Q]} from ranked document rows [Q, k>=100 or the corpus size] and each
    query's judgements {document row: grade}."""
    n, depth = ranked.shape
    grades = np.zeros((n, depth))
    relevant_total = np.zeros(n)
    ideal = np.zeros((n, 10))
    for i, judged in enumerate(judgements):
        grades[i] = [max(judged.get(int(d), 0), 0) for d in ranked[i]]
        positive = sorted((g for g in judged.values() if g >= 1), reverse=True)
        relevant_total[i] = len(positive)
        ideal[i, : min(10, len(positive))] = positive[:10]
    discount = 1.0 / np.log2(np.arange(2, 12))  # ranks 1..10
    dcg = (grades[:, :10] * discount[: min(10, depth)]).sum(1)
    idcg = (ideal * discount).sum(1)
    hits = grades >= 1  # [Q, k]
    first = np.where(hits[:, :10].any(1), hits[:, :10].argmax(1) + 1, np.inf)
    precision_at = np.cumsum(hits[:, :DEPTH], axis=1) / np.arange(1, min(DEPTH, depth) + 1)  # [Q, 100]
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "ndcg@10": np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1), 0.0),
            "mrr@10": 1.0 / first,
            "recall@100": np.where(relevant_total > 0, hits[:, :DEPTH].sum(1) / np.maximum(relevant_total, 1), 0.0),
            "map@100": np.where(
                relevant_total > 0, (precision_at * hits[:, :DEPTH]).sum(1) / np.maximum(relevant_total, 1), 0.0
            ),
        }
