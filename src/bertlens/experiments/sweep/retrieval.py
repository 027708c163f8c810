"""The retrieval sweep's protocols: every candidate as a cosine retriever over the corpus, per ranking metric.

Retrieval has its own bank (documents and queries, with prompts and long-document readings: probing/retrieval.py)
and its own hold-out (the choosing queries: tasks/retrieval.query_split), so it runs as one step that yields a
ProtocolResult per metric (and the label-free one when asked), all from one scoring pass.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from bertlens.encoding.encoder import Encoder
from bertlens.io.cache import default_cache_dir
from bertlens.metrics.bootstrap import bootstrap
from bertlens.metrics.ranking import RANKING_METRICS
from bertlens.probing.candidates import candidate_features
from bertlens.probing.label_free import LabelFreeScores
from bertlens.probing.label_trust import Trust, label_free_trust, last_layer_default, settle
from bertlens.probing.retrieval import LATE_CHUNK, RetrievalSweep, sweep_retrieval
from bertlens.probing.truncation import retrieval_loss
from bertlens.progress import Progress
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import TaskData
from bertlens.tasks.retrieval import query_split

from .config import SweepConfig
from .label_free import score_texts
from .results import ProtocolResult, SweepResult


def protocol_key(metric: str) -> str:
    """A retrieval sweep's protocols: 'cosine' for nDCG@10 (the main one), 'cosine-<metric>' for the others."""
    return "cosine" if metric == RANKING_METRICS[0] else f"cosine-{metric}"


def retrieval_protocols(
    task: TaskData, encoder: Encoder, base: Recipe, cache_dir, config: SweepConfig, progress: Progress
):
    """Every candidate as a cosine retriever: (protocols by key, fitted post-processors, timings)."""
    collection = task.collection
    split = query_split(collection, config.seed)
    rows = np.concatenate([split.dev, split.test])
    plan = RetrievalSweep(
        config.poolers,
        config.layers,
        config.postprocess or "whiten",
        config.prompt_sets,
        base.include_special,
        config.bank_dtype,
        base.long_text_strategy,
        config.long_documents,
        len(split.dev),
    )
    start = time.perf_counter()
    scores = sweep_retrieval(
        encoder,
        collection.documents,
        tuple(collection.queries[q] for q in rows),
        [*split.dev_judgements, *split.test_judgements],
        default_cache_dir(cache_dir),
        plan,
        progress,
    )
    timings = {
        "bank_seconds": scores.bank_seconds,
        "retrieval_seconds": time.perf_counter() - start - scores.bank_seconds - scores.long_document_seconds,
    }
    if config.long_documents:
        timings["long_document_seconds"] = scores.long_document_seconds
    n_dev = len(split.dev)
    post = f"post-processing ({plan.post}) fitted on the corpus vectors"
    if scores.unfitted:
        post += f" where it could be (skipped for {len(scores.unfitted)} candidates: see the notes)"
    description = "cosine top-100 of each query over the whole corpus (exact search, no training); " + post
    description += "; " + split.description
    if plan.long_documents:
        description += (
            "; long documents: the best candidate on the choosing queries also read as head_tail, windows, "
            f"independent chunks and late chunks ({LATE_CHUNK} tokens), aggregated by mean or kept one vector per "
            "chunk with a document scored by its best (maxp: `bertlens index` stores the chunks)"
        )
    if plan.prompt_sets:
        description += "; prompt sets " + ", ".join(
            f"@{p.name} (query {p.query!r}, document {p.document!r})" for p in plan.prompt_sets
        )
    protocols = {}
    for metric, values in scores.per_query.items():  # values [C, Q_dev + Q_test]
        with np.errstate(invalid="ignore"):
            validation = values[:, :n_dev].mean(axis=1)
        intervals = bootstrap(values[:, n_dev:], None, metric, resamples=config.resamples, seed=config.seed)
        protocols[protocol_key(metric)] = ProtocolResult(
            "cosine",
            metric,
            scores.candidates,
            validation,
            intervals,
            len(split.test),
            {},
            description,
            scored_by=scores.scored_by,
            outputs=values[:, n_dev:],
            validation_outputs=values[:, :n_dev],  # each choosing query's own score: the choice's evidence
        )
    free = trust = None
    if config.protocols and "label_free" in config.protocols:
        start = time.perf_counter()
        texts = list(scores.plain_texts)
        protocols["label_free"], free = score_texts(
            scores.plain_bank, encoder, texts, base, cache_dir, config, progress
        )
        trust = retrieval_trust(free, protocols["cosine"], scores, n_dev, config)
        timings["label_free_seconds"] = time.perf_counter() - start
    return protocols, scores, timings, free, trust


def retrieval_dimension_loss(result: SweepResult, scores, task: TaskData, config: SweepConfig):
    """The recommended retriever's nDCG@10 lost at each shorter width, on the test queries, read from the bank of
    its prompt set (None for a long-document reading: its documents are not in a bank)."""
    chosen = result.recommended
    if chosen.long_text is not None or (chosen.prompts.name if chosen.prompts else None) not in scores.banks:
        return None
    split = query_split(task.collection, config.seed)
    position = {int(q): i for i, q in enumerate(np.concatenate([split.dev, split.test]))}
    test = np.array([position[int(q)] for q in split.test])
    doc_vectors, query_vectors = candidate_vectors(scores, chosen, test)
    return retrieval_loss(doc_vectors, query_vectors, list(split.test_judgements)) or None


def candidate_vectors(scores, candidate, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A bank candidate's document vectors [N, D] and those of the sweep's queries at positions `queries` [q, D]
    (in sweep order: dev, then test), post-processed as it was scored, from its prompt set's bank."""
    key = candidate.prompts.name if candidate.prompts is not None else None
    bank, documents, query_rows = scores.banks[key]  # query_rows: the collection's scored queries, in sweep order
    plain = replace(candidate, post=None)
    processor = scores.processors.get(candidate.name)
    transform = processor.transform if processor is not None else (lambda x: x)
    doc_vectors = transform(candidate_features(bank, plain, documents))
    return doc_vectors, transform(candidate_features(bank, plain, query_rows[queries]))


def retrieval_trust(free: LabelFreeScores, main: ProtocolResult, scores, n_dev: int, config: SweepConfig) -> Trust:
    """The label-free pick judged by the test queries; the choice from a few judged queries drawn from the choosing
    (dev) queries: the candidate with the best mean nDCG@10 over them."""
    names = [c.name for c in main.candidates]
    width = scores.plain_bank.width
    last = last_layer_default(names, scores.plain_bank.num_layers)
    trust = label_free_trust(free, names, main.test, main.outputs, None, main.metric, last, width, config.seed)
    dev = scores.per_query[RANKING_METRICS[0]][:, :n_dev]  # [C, Q_dev]
    eligible = [i for i, c in enumerate(main.candidates) if scores.scored_by[i] == "cosine"]

    def choose(rows: np.ndarray) -> int:
        with np.errstate(invalid="ignore"):
            mean = np.nan_to_num(dev[eligible][:, rows].mean(axis=1), nan=-1.0)
        return eligible[int(np.argmax(mean))]

    return replace(trust, settling=settle(choose, np.arange(n_dev), main.test, config.seed))
