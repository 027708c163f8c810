"""Score every sweep candidate as a retriever: cosine top-100 over the corpus, per-query ranking metrics.

No training: each candidate's document and query vectors come from the one feature bank; a
candidate with post-processing (e.g. whitening, Su et al. 2021) has it fitted on the corpus
vectors alone, which carry no judgement, so scoring on the same corpus does not leak.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from bertlens.encoding.chunking import LongText
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.features.bank import Bank, build_bank
from bertlens.metrics.ranking import DEPTH, RANKING_METRICS, ranking_metrics, top_k
from bertlens.probing.candidates import Candidate, PromptSet, candidate_features, enumerate_candidates
from bertlens.progress import Progress, silent
from bertlens.representation.postprocess import PostProcessor, parse_steps


@dataclass(frozen=True)
class RetrievalScores:
    per_query: dict[str, np.ndarray]  # metric -> [C, Q]: each candidate's score on each query (NaN: undefined)
    processors: dict[str, PostProcessor]  # candidate name -> its post-processing, fitted on the corpus
    candidates: tuple[Candidate, ...] = ()
    bank_seconds: float = 0.0  # encoding (one pass per prompt set)


@dataclass(frozen=True)
class RetrievalSweep:
    """What a retrieval sweep scores: candidates (single layers, mixes, each also post-processed), prompt sets, and
    how the bank is built (BankOptions: poolers, dtype, special tokens, long-text strategy)."""

    poolers: tuple[str, ...]
    layers: tuple[int, ...] | None
    post: str  # post-processing steps, fitted on the corpus vectors
    prompt_sets: tuple[PromptSet, ...]  # besides no prompt at all
    include_special: bool = True
    dtype: str = "float16"
    long_text: LongText | None = None


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


def sweep_retrieval(
    encoder: Encoder,
    documents: tuple[str, ...],
    queries: tuple[str, ...],
    judgements: list[dict[int, int]],
    cache_dir: Path,
    plan: RetrievalSweep,
    progress: Progress = silent,
) -> RetrievalScores:
    """One bank per prompt set (no prompt first), every candidate of each scored on `queries` (their texts, in
    the order of `judgements`). ScalarMix is left out: its weights would be learned from judgements."""
    per_query: dict[str, list[np.ndarray]] = {}
    processors: dict[str, PostProcessor] = {}
    candidates: list[Candidate] = []
    seconds = 0.0
    for prompts in (None, *plan.prompt_sets):
        doc_texts = [(prompts.document if prompts else "") + d for d in documents]
        query_texts = [(prompts.query if prompts else "") + q for q in queries]
        texts = list(dict.fromkeys([*doc_texts, *query_texts]))
        start = time.perf_counter()
        bank = build_bank(
            encoder,
            texts,
            cache_dir,
            poolers=plan.poolers,
            include_special=plan.include_special,
            dtype=plan.dtype,
            long_text=plan.long_text,
            progress=progress,
        )
        seconds += time.perf_counter() - start
        index = {text: i for i, text in enumerate(texts)}
        plain = [
            replace(c, prompts=prompts)
            for c in enumerate_candidates(bank.num_layers, plan.poolers, plan.layers)
            if c.mixer != "scalar_mix"
        ]
        family = plain + [replace(c, post=plan.post) for c in plain]
        scores = score_candidates(
            bank,
            family,
            np.array([index[t] for t in doc_texts]),
            np.array([index[t] for t in query_texts]),
            judgements,
            progress,
        )
        for metric, values in scores.per_query.items():
            per_query.setdefault(metric, []).append(values)
        processors.update(scores.processors)
        candidates += family
    stacked = {metric: np.concatenate(parts) for metric, parts in per_query.items()}  # [C, Q]
    return RetrievalScores(stacked, processors, tuple(candidates), seconds)
