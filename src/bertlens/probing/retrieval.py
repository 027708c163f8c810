"""Score every sweep candidate as a retriever: cosine top-100 over the corpus, per-query ranking metrics.

No training: each candidate's document and query vectors come from the one feature bank; a
candidate with post-processing (e.g. whitening, Su et al. 2021) has it fitted on the corpus
vectors alone, which carry no judgement, so scoring on the same corpus does not leak.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bertlens.errors import BertlensError
from bertlens.features.bank import Bank
from bertlens.metrics.ranking import DEPTH, RANKING_METRICS, ranking_metrics, top_k
from bertlens.probing.candidates import Candidate, candidate_features
from bertlens.progress import Progress, silent
from bertlens.representation.postprocess import PostProcessor, parse_steps


@dataclass(frozen=True)
class RetrievalScores:
    per_query: dict[str, np.ndarray]  # metric -> [C, Q]: each candidate's score on each query (NaN: undefined)
    processors: dict[str, PostProcessor]  # candidate name -> its post-processing, fitted on the corpus


def _constant(vectors: np.ndarray) -> bool:
    """Every document gets the same vector (e.g. [CLS] of the embedding layer): a ranking would be arbitrary."""
    return bool(np.abs(vectors - vectors[:1]).max() <= 1e-6 * (np.abs(vectors).max() + 1e-12))


def _normalised(x: np.ndarray) -> torch.Tensor:
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))  # [n, D]
    return torch.nn.functional.normalize(t, dim=1)


def score_candidates(
    bank: Bank,
    candidates: list[Candidate],
    documents: np.ndarray,
    queries: np.ndarray,
    judgements: list[dict[int, int]],
    progress: Progress = silent,
) -> RetrievalScores:
    """documents [N] and queries [Q] are bank rows; judgements[q] maps a document's position in
    `documents` to its grade. Returns each metric per candidate and query."""
    per_query = {m: np.full((len(candidates), len(queries)), np.nan) for m in RANKING_METRICS}
    processors: dict[str, PostProcessor] = {}
    for i, candidate in enumerate(candidates):
        progress("retrieval: searching the corpus", i, len(candidates))
        doc_vectors = candidate_features(bank, candidate, documents)  # [N, D]
        if _constant(doc_vectors):
            continue
        query_vectors = candidate_features(bank, candidate, queries)  # [Q, D]
        if candidate.post:
            try:
                processor = PostProcessor.fit(parse_steps(candidate.post), doc_vectors)
            except BertlensError:
                continue  # cannot be fitted on these vectors (e.g. rank-deficient): the candidate is undefined
            processors[candidate.name] = processor
            doc_vectors, query_vectors = processor.transform(doc_vectors), processor.transform(query_vectors)
        _, ranked = top_k(_normalised(query_vectors), _normalised(doc_vectors), DEPTH)  # [Q, 100]
        for name, values in ranking_metrics(ranked.numpy(), judgements).items():
            per_query[name][i] = values
    progress("retrieval: searching the corpus", len(candidates), len(candidates))
    return RetrievalScores(per_query, processors)
