"""The retrieval sweep's `late_interaction` protocol: no pooling, every token kept, queries scored by MaxSim.

Asked for with `--protocols cosine,late_interaction`. Stages, each chosen on the choosing (dev) queries only:
1. every layer asked, tokens as the model gives them: one row per layer;
2. the best layer with ColBERT's choices (Khattab & Zaharia 2020): special tokens dropped, the documents'
   punctuation dropped, both, queries padded with mask tokens to QUERY_AUGMENT;
3. the best of those reduced to 128 dimensions, by a PCA fitted on the corpus' tokens and by a random map.
Every row is scored on the same test queries as the pooled candidates, with the same bootstrap (same seed, so the
same resamples), and the best late-interaction reading is compared with the recommended pooled one by a paired
bootstrap: the report says whether keeping the tokens wins here, and at what index size.

Up to FULL_SEARCH_DOCUMENTS documents MaxSim searches the whole corpus. Above it the first stage is the best pooled
reading's top 100 per query and MaxSim re-ranks them (how late interaction is usually deployed): token vectors are
kept only for the documents some query's first stage holds, and the description says so.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.features.token_bank import build_token_bank
from bertlens.io.cache import default_cache_dir
from bertlens.metrics.bootstrap import bootstrap, paired_difference
from bertlens.metrics.ranking import RANKING_METRICS, top_k
from bertlens.probing.candidates import Candidate
from bertlens.probing.late_interaction import score_token_readings
from bertlens.progress import Progress
from bertlens.representation.late_interaction import QUERY_AUGMENT, TokenReading
from bertlens.representation.recipe import RERANK_DEPTH
from bertlens.representation.token_projection import REDUCTIONS, TOKEN_DIM, TokenProjection
from bertlens.tasks.retrieval import query_split

from .config import SweepConfig
from .results import LateInteractionPick, ProtocolResult, SweepResult
from .retrieval import candidate_vectors

FULL_SEARCH_DOCUMENTS = 50_000  # above: MaxSim re-ranks the best pooled reading's top RERANK_DEPTH (token banks of
# a whole corpus of base-size vectors grow 1.5 KB a token a layer: ~20 GB for 50k passages of 100 tokens at 13 layers);
# the pick's recipe then carries that pooled reading as its first_stage, so `search` ranks as the sweep scored
PROTOCOL = "late_interaction"


@dataclass(frozen=True)
class LateInteraction:
    """The protocol's result, the projections its reducing rows fitted, and what the reader should know."""

    result: ProtocolResult
    pick: int  # the row chosen on the choosing queries
    projection: TokenProjection | None  # the one its reduction fitted (None: not reduced)
    comparison: str  # the best late-interaction reading against the recommended pooled one, on the test queries
    bytes_per_document: dict[str, float]  # each row's index size per document (float16 token vectors)
    seconds: dict[str, float]


def _layers(config: SweepConfig, encoder: Encoder) -> tuple[int, ...]:
    return tuple(config.layers) if config.layers else tuple(range(encoder.num_layers + 1))


def _best(per_query: dict[str, np.ndarray], rows: list[int], n_dev: int) -> int:
    """The row (of `rows`) with the best mean nDCG@10 on the choosing queries; ties: the earlier row."""
    with np.errstate(invalid="ignore"):
        dev = np.nan_to_num(per_query[RANKING_METRICS[0]][rows, :n_dev].mean(axis=1), nan=-1.0)
    return rows[int(np.argmax(dev))]


def first_stage_ranking(scores, pooled: Candidate, n_queries: int) -> np.ndarray:
    """[Q, 100] the pooled candidate's cosine ranking of the corpus for the sweep's queries (its own bank rows)."""
    doc_vectors, query_vectors = candidate_vectors(scores, pooled, np.arange(n_queries))  # [N, D], [Q, D]

    def unit(x: np.ndarray) -> torch.Tensor:
        return torch.nn.functional.normalize(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)), dim=1)

    return top_k(unit(query_vectors), unit(doc_vectors), RERANK_DEPTH)[1].numpy()  # [Q, 100]


def _check_disk(cache_dir, needed: int) -> None:
    cache_dir.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(cache_dir).free
    if needed > free * 0.9:
        raise BertlensError(
            f"the late-interaction token bank needs {needed / 1e9:.1f} GB in {cache_dir} and {free / 1e9:.1f} GB is "
            "free; ask fewer layers (--layers), give --cache-dir on a larger disk, or drop late_interaction"
        )


def late_interaction_protocol(
    encoder: Encoder,
    collection_texts: tuple[tuple[str, ...], tuple[str, ...]],
    judgements: list[dict[int, int]],
    pooled: tuple[Candidate, np.ndarray],
    scores,
    cache_dir,
    config: SweepConfig,
    n_dev: int,
    progress: Progress,
) -> LateInteraction:
    """Score the late-interaction readings. `collection_texts` = (documents, queries in sweep order: dev, then
    test); `pooled` = (the recommended pooled candidate, its per-query nDCG@10 [Q]) for the first stage and the
    comparison; `scores` the pooled sweep's RetrievalScores (its banks give the first stage)."""
    start = time.perf_counter()
    documents, queries = collection_texts
    layers = _layers(config, encoder)
    documents, rows, first_stage, mode = _corpus_reading(documents, len(queries), pooled[0], scores)
    document_bank = build_token_bank(
        encoder, list(documents), cache_dir, layers, progress=progress, check_size=partial(_check_disk, cache_dir)
    )
    needed = document_bank.vectors.nbytes
    query_banks = {0: build_token_bank(encoder, list(queries), cache_dir, layers, progress=progress)}
    bank_seconds = time.perf_counter() - start

    def scored(new: list[TokenReading]) -> int:
        """Score `new` readings onto `readings` and `per_query`; returns the first new row's index."""
        more, fitted = score_token_readings(
            document_bank, query_banks, new, judgements, first_stage, progress, seed=config.seed, document_rows=rows
        )
        first = len(readings)
        readings.extend(new)
        projections.update(fitted)
        for metric, values in more.items():
            per_query[metric] = values if metric not in per_query else np.concatenate([per_query[metric], values])
        return first

    readings: list[TokenReading] = []
    per_query: dict[str, np.ndarray] = {}
    projections: dict[str, TokenProjection] = {}
    scored([TokenReading(layer) for layer in layers])  # stage 1: each layer as it is
    best = _best(per_query, list(range(len(readings))), n_dev)
    variants = [  # stage 2: the best layer with ColBERT's filters and query augmentation
        replace(readings[best], drop_special=True),
        replace(readings[best], drop_punctuation=True),
        replace(readings[best], drop_special=True, drop_punctuation=True),
    ]
    if encoder.tokenizer.mask_token_id is not None:
        query_banks[QUERY_AUGMENT] = build_token_bank(
            encoder, list(queries), cache_dir, (readings[best].layer,), augment=QUERY_AUGMENT, progress=progress
        )
        variants.append(replace(readings[best], augment=QUERY_AUGMENT))
    first = scored(variants)
    chosen = readings[_best(per_query, [best, *range(first, len(readings))], n_dev)]
    if TOKEN_DIM < encoder.hidden_size:  # stage 3: the best so far reduced to TOKEN_DIM dimensions
        enough = int(document_bank.offsets[-1]) >= 2 * TOKEN_DIM  # a PCA to 128 needs more tokens than that
        scored([replace(chosen, reduction=kind) for kind in REDUCTIONS if kind != "pca" or enough])

    candidates = tuple(Candidate.of_tokens(r) for r in readings)
    main = per_query[RANKING_METRICS[0]]  # [R, Q]
    with np.errstate(invalid="ignore"):
        validation = main[:, :n_dev].mean(axis=1)
    intervals = bootstrap(main[:, n_dev:], None, RANKING_METRICS[0], resamples=config.resamples, seed=config.seed)
    pick = _best(per_query, list(range(len(readings))), n_dev)
    comparison = _comparison(pooled, (readings[pick], main[pick]), n_dev, config)
    sizes = {r.name: _bytes_per_document(document_bank, r, encoder.hidden_size) for r in readings}
    description = (
        f"{mode}; token bank {needed / 1e9:.2f} GB ({len(layers)} layers, float16): each query token's best cosine "
        f"over a document's tokens, summed (ColBERT's MaxSim); layers {list(layers)} as they are, then for the best "
        f"layer on the choosing queries special tokens and punctuation dropped and queries padded to {QUERY_AUGMENT} "
        f"mask tokens, then the best of those reduced to {TOKEN_DIM} dimensions (PCA fitted on the corpus' tokens, "
        "or a seeded random map)"
    )
    result = ProtocolResult(
        PROTOCOL,
        RANKING_METRICS[0],
        candidates,
        validation,
        intervals,
        main.shape[1] - n_dev,
        {},
        description,
        outputs=main[:, n_dev:],
        validation_outputs=main[:, :n_dev],
    )
    seconds = {"late_interaction_bank_seconds": bank_seconds, "late_interaction_seconds": time.perf_counter() - start}
    return LateInteraction(result, pick, projections.get(readings[pick].name), comparison, sizes, seconds)


def _corpus_reading(documents: tuple[str, ...], n_queries: int, pooled: Candidate, scores):
    """(the documents token vectors are kept for, their corpus rows or None for all, the first stage [Q, 100] in
    their rows or None, the mode in words)."""
    if len(documents) <= FULL_SEARCH_DOCUMENTS:
        return documents, None, None, "MaxSim over the whole corpus"
    ranked = first_stage_ranking(scores, pooled, n_queries)  # [Q, 100] corpus rows
    rows = np.unique(ranked)  # the documents some first stage holds
    mode = (
        f"the corpus has more than {FULL_SEARCH_DOCUMENTS:,} documents, so MaxSim re-ranks the top {RERANK_DEPTH} of the "
        f"recommended pooled reading {pooled.name} ({len(rows):,} documents hold token vectors)"
    )
    return tuple(documents[int(r)] for r in rows), rows, np.searchsorted(rows, ranked), mode


def _comparison(pooled, late, n_dev: int, config: SweepConfig) -> str:
    """The best late-interaction reading against the recommended pooled one on the test queries, in words."""
    pair = np.stack([pooled[1][n_dev:], late[1][n_dev:]])  # [2, Q_test]: pooled, late interaction
    gain, low, high = paired_difference(pair, None, RANKING_METRICS[0], resamples=config.resamples, seed=config.seed)
    verdict = "better than" if low > 0 else ("worse than" if high < 0 else "tied with")
    return (
        f"late interaction {late[0].name} (chosen on the choosing queries) is {verdict} the recommended pooled "
        f"reading {pooled[0].name} on the test queries: nDCG@10 {gain:+.4f} [{low:+.4f}, {high:+.4f}] (paired "
        f"bootstrap, {config.resamples} resamples)"
    )


def _bytes_per_document(bank, reading: TokenReading, hidden: int) -> float:
    """The float16 token vectors a document keeps under this reading, averaged over the corpus."""
    keep = np.ones(len(bank.special), dtype=bool)
    if reading.drop_special:
        keep &= ~bank.special
    if reading.drop_punctuation:
        keep &= ~bank.punctuation
    width = TOKEN_DIM if reading.reduction else hidden
    return float(keep.sum()) * width * 2 / max(len(bank.offsets) - 1, 1)


def with_late_interaction(result: SweepResult, task, encoder: Encoder, scores, cache_dir, config, progress):
    """The pooled sweep's result with the late_interaction protocol added: its rows, its pick's multi-vector recipe
    and projection, the comparison as a note and its timings."""
    split = query_split(task.collection, config.seed)
    order = np.concatenate([split.dev, split.test])
    cosine = result.protocols["cosine"]
    names = [c.name for c in cosine.candidates]
    pooled, first_stage = result.recommended, result.recipe
    if pooled.long_text is not None:  # not in a bank, so no first stage from it: the best reading that is, and
        # that a recipe carries alone (its post-processor's file is the recommended one's, so none)
        pooled = max(
            (
                c
                for c in cosine.candidates
                if c.long_text is None and not c.post and np.isfinite(cosine.validation[names.index(c.name)])
            ),
            key=lambda c: cosine.validation[names.index(c.name)],
        )
        first_stage = pooled.recipe(result.recipe.replace(long_text=None), cosine.mix_weights.get(pooled.name))
    row = names.index(pooled.name)
    per_query = np.concatenate([cosine.validation_outputs[row], cosine.outputs[row]])  # [Q] dev, then test
    late = late_interaction_protocol(
        encoder,
        (task.collection.documents, tuple(task.collection.queries[q] for q in order)),
        [*split.dev_judgements, *split.test_judgements],
        (pooled, per_query),
        scores,
        default_cache_dir(cache_dir),
        config,
        len(split.dev),
        progress,
    )
    candidate = late.result.candidates[late.pick]
    recipe = candidate.recipe(result.recipe)
    if len(task.collection.documents) > FULL_SEARCH_DOCUMENTS:  # deployed as it was scored: re-ranking the first stage
        recipe = recipe.replace(first_stage=first_stage.replace(dimension_loss=None), rerank_depth=RERANK_DEPTH)
    pick = LateInteractionPick(candidate, recipe, late.projection, late.comparison, late.bytes_per_document)
    return replace(
        result,
        protocols={**result.protocols, PROTOCOL: late.result},
        late_interaction=pick,
        timings={**result.timings, **late.seconds},
        notes=(*result.notes, late.comparison),
    )
