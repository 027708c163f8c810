"""Score every sweep candidate as a retriever: cosine top-100 over the corpus, per-query ranking metrics.

No training: each candidate's document and query vectors come from the one feature bank; a
candidate with post-processing (e.g. whitening, Su et al. 2021) has it fitted on the corpus
vectors alone, which carry no judgement, so scoring on the same corpus does not leak.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from bertlens.embedding.long_text import Pieces, encode_pieces
from bertlens.encoding.chunking import MAXP, LongText, parse_long_text
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.features.bank import Bank, build_bank
from bertlens.metrics.ranking import DEPTH, RANKING_METRICS, ranking_metrics, top_k, top_k_maxsim
from bertlens.probing.candidates import Candidate, PromptSet, candidate_features, enumerate_candidates
from bertlens.progress import Progress, counting, silent
from bertlens.representation.apply import Representation
from bertlens.representation.postprocess import PostProcessor, parse_steps
from bertlens.representation.recipe import Recipe

POST_FIT_DOCUMENTS = 20000  # whitening is fitted on a seeded sample of this many documents at most: a covariance
# estimate needs far more rows than dimensions, not the whole corpus (fitting is O(N D^2))


@dataclass(frozen=True)
class RetrievalScores:
    per_query: dict[str, np.ndarray]  # metric -> [C, Q]: each candidate's score on each query (NaN: undefined)
    processors: dict[str, PostProcessor]  # candidate name -> its post-processing, fitted on the corpus
    candidates: tuple[Candidate, ...] = ()
    bank_seconds: float = 0.0  # encoding (one pass per prompt set)
    scored_by: tuple[str, ...] = ()  # per candidate: 'cosine', or 'maxp' (a long-document reading scoring chunks)
    long_document_seconds: float = 0.0
    plain_bank: Bank | None = field(default=None, repr=False)  # the bank without prompts (corpus + queries)
    plain_texts: tuple[str, ...] = field(default=(), repr=False)  # its texts, in bank order
    unfitted: tuple[str, ...] = ()  # post-processed candidates left undefined: their steps could not be fitted
    # each prompt set's bank (None: no prompt) with its document and query rows in the order of the collection
    banks: dict = field(default_factory=dict, repr=False)


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
    long_documents: bool = False  # also score READINGS of long documents for the best candidate on dev
    choosing_queries: int = 0  # the first queries, which choose (the best candidate for the long-document readings)


def _constant(vectors: np.ndarray) -> bool:
    """Every document gets the same vector (e.g. [CLS] of the embedding layer): a ranking would be arbitrary."""
    return bool(np.abs(vectors - vectors[:1]).max() <= 1e-6 * (np.abs(vectors).max() + 1e-12))


def _normalised(x: np.ndarray) -> torch.Tensor:
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))  # [n, D]
    return torch.nn.functional.normalize(t, dim=1)


def _fit_post(steps: str, documents: np.ndarray) -> PostProcessor | None:
    """Post-processing fitted on the corpus vectors [N, D] (a seeded sample of at most POST_FIT_DOCUMENTS), or
    None when it cannot be fitted on them."""
    rows = np.sort(np.random.default_rng(0).permutation(len(documents))[:POST_FIT_DOCUMENTS])
    try:
        return PostProcessor.fit(parse_steps(steps), documents[rows])
    except BertlensError:
        return None


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
    unfitted: list[str] = []
    read: tuple = (None, None, None)  # the last (candidate without post, its documents, its queries): twins share it
    for i, candidate in enumerate(candidates):
        progress(counting("retrieval: searching the corpus", "candidates"), i, len(candidates))
        plain = replace(candidate, post=None)
        if read[0] != plain:
            read = (plain, candidate_features(bank, plain, documents), candidate_features(bank, plain, queries))
        _, doc_vectors, query_vectors = read  # [N, D], [Q, D]
        if _constant(doc_vectors):
            continue
        if candidate.post:
            processor = _fit_post(candidate.post, doc_vectors)
            if processor is None:  # cannot be fitted on these vectors (e.g. rank-deficient): the candidate is undefined
                unfitted.append(candidate.name)
                continue
            processors[candidate.name] = processor
            doc_vectors = processor.transform(doc_vectors, dtype=np.float32)
            query_vectors = processor.transform(query_vectors, dtype=np.float32)
        _, ranked = top_k(_normalised(query_vectors), _normalised(doc_vectors), DEPTH)  # [Q, 100]
        for name, values in ranking_metrics(ranked.numpy(), judgements).items():
            per_query[name][i] = values
    progress(counting("retrieval: searching the corpus", "candidates"), len(candidates), len(candidates))
    return RetrievalScores(per_query, processors, unfitted=tuple(unfitted))


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
    unfitted: list[str] = []
    kept_banks: dict = {}
    seconds = 0.0
    query_rows: dict[PromptSet | None, tuple] = {}
    for prompts in (None, *plan.prompt_sets):
        doc_texts = [(prompts.document if prompts else "") + d for d in documents]
        query_texts = [(prompts.query if prompts else "") + q for q in queries]
        texts = list(dict.fromkeys([*doc_texts, *query_texts]))
        if prompts is None:
            plain_texts = texts  # the label-free protocol reads this bank's texts
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
        query_rows[prompts] = (bank, np.array([index[t] for t in query_texts]))
        documents_rows = np.array([index[t] for t in doc_texts])
        kept_banks[prompts.name if prompts else None] = (bank, documents_rows, query_rows[prompts][1])
        plain = [
            replace(c, prompts=prompts)
            for c in enumerate_candidates(bank.num_layers, plan.poolers, plan.layers)
            if c.mixer != "scalar_mix"
        ]
        family = [twin for c in plain for twin in (c, replace(c, post=plan.post))]  # twins share one read
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
        unfitted += scores.unfitted
        candidates += family
    stacked = {metric: np.concatenate(parts) for metric, parts in per_query.items()}  # [C, Q]
    scored_by = ["cosine"] * len(candidates)
    start = time.perf_counter()
    if plan.long_documents:
        with np.errstate(invalid="ignore"):
            dev = np.nan_to_num(stacked[RANKING_METRICS[0]][:, : plan.choosing_queries].mean(axis=1), nan=-1.0)
        best = candidates[int(np.argmax(dev))]
        bank, rows = query_rows[best.prompts]
        query_vectors = candidate_features(bank, replace(best, post=None), rows)  # [Q, D]
        read, values, how, fitted = score_readings(
            encoder, best, documents, query_vectors, judgements, plan.include_special, progress
        )
        processors.update(fitted)
        candidates += read
        scored_by += how
        stacked = {metric: np.concatenate([stacked[metric], values[metric]]) for metric in stacked}
    plain_bank, _ = query_rows[None]
    return RetrievalScores(
        stacked,
        processors,
        tuple(candidates),
        seconds,
        tuple(scored_by),
        time.perf_counter() - start,
        plain_bank,
        tuple(plain_texts),
        tuple(unfitted),
        kept_banks,
    )


LATE_CHUNK = 64
# every reading is a recipe's long_text: maxp readings keep one vector per chunk and score a document by its best
READINGS = tuple(
    parse_long_text(spec)
    for spec in (
        "head_tail",
        "windows:mean",
        "windows:maxp",
        f"chunks:{LATE_CHUNK}:mean",
        f"chunks:{LATE_CHUNK}:maxp",
        f"late:{LATE_CHUNK}:mean",
        f"late:{LATE_CHUNK}:maxp",
    )
)


def scored_by(reading: LongText) -> str:
    """How a reading's figures were made: 'maxp' (a document scores its best chunk) or 'cosine' (one vector)."""
    return MAXP if reading.per_piece else "cosine"


def score_readings(
    encoder: Encoder,
    candidate: Candidate,
    documents: tuple[str, ...],
    query_vectors: np.ndarray,
    judgements: list[dict[int, int]],
    include_special: bool = True,
    progress: Progress = silent,
) -> tuple[list[Candidate], dict[str, np.ndarray], list[str], dict[str, PostProcessor]]:
    """`candidate` with every reading of READINGS: (its candidates, metric -> [R, Q], how each was scored, the
    post-processors fitted by candidate name). Documents are read as the recipe reads them (Embedder.embed_chunks
    for maxp); the queries keep the candidate's own vectors [Q, D] (a query is read whole: for_queries);
    post-processing is refitted on each reading's document vectors."""
    base = Recipe(model=encoder.ref.name, include_special=include_special)
    representation = Representation(candidate.recipe(base).replace(postprocess=None, long_text=None))
    texts = [(candidate.prompts.document if candidate.prompts else "") + d for d in documents]
    candidates, how, processors = [], [], {}
    per_query = {m: np.full((len(READINGS), len(query_vectors)), np.nan) for m in RANKING_METRICS}
    encoded: dict[LongText, Pieces] = {}  # a mean and a maxp reading of the same pieces share one encoding pass
    for r, reading in enumerate(READINGS):
        progress(counting(f"retrieval: long documents ({reading.name})", "readings"), r, len(READINGS))
        read = replace(candidate, long_text=reading.name)
        candidates.append(read)
        how.append(scored_by(reading))
        key = replace(reading, aggregate="mean")
        if key not in encoded:
            encoded[key] = encode_pieces(encoder, representation, texts, reading)
        pieces = encoded[key]
        vectors = pieces.vectors if reading.per_piece else pieces.aggregate(len(texts), reading.piece_aggregate)
        queries = query_vectors
        if candidate.post:
            processor = _fit_post(candidate.post, vectors)
            if processor is None:
                continue  # the reading is undefined for this candidate, as in score_candidates
            processors[read.name] = processor
            vectors = processor.transform(vectors, dtype=np.float32)
            queries = processor.transform(queries, dtype=np.float32)
        if reading.per_piece:
            owner = torch.from_numpy(pieces.doc_index.astype(np.int64))
            _, ranked = top_k_maxsim(_normalised(queries), _normalised(vectors), owner, len(texts))
        else:
            _, ranked = top_k(_normalised(queries), _normalised(vectors))
        for name, values in ranking_metrics(ranked.numpy(), judgements).items():
            per_query[name][r] = values
    return candidates, per_query, how, processors
