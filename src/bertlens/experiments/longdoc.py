"""Compare long-text strategies on a document classification task, with one recipe.

Truncations (head, tail, head_tail) are one pass each; every windows aggregate (mean, max,
first, weighted) and both chunk classifiers (attention, gru) share one windows pass. Vector
strategies are scored together by one batched logistic probe per fold (C chosen on an inner
dev split); chunk classifiers are trained per fold on the frozen chunk vectors. Scores are
out-of-fold accuracies with paired bootstrap intervals; speed is documents per second of the
encoding pass, as a ratio to head truncation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from bertlens.embedding.long_text import Pieces, encode_pieces
from bertlens.encoding.chunking import LongText, parse_long_text
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError, did_you_mean
from bertlens.metrics.bootstrap import Intervals, bootstrap
from bertlens.probing.selection import C_GRID, logistic_on_dev
from bertlens.progress import Progress, counting, silent
from bertlens.representation.apply import Representation
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import Split, TaskData
from bertlens.tasks.splits import make_folds
from bertlens.training.hierarchical import CHUNK_DEFAULTS, HIERARCHICAL, ChunkSequences, train_chunk_classifier

DEFAULT_STRATEGIES = ("head", "tail", "head_tail", "windows:mean", "windows:max", "hier:attention", "hier:gru")


@dataclass(frozen=True)
class LongTextResult:
    task: str
    model: str
    strategies: tuple[str, ...]
    intervals: Intervals
    encode_seconds: dict[str, float]  # per encoding pass: head, tail, head_tail:128, windows...
    pass_of: dict[str, str]  # strategy -> the encoding pass it uses
    documents: int
    folds: int
    pieces_per_document: float
    max_length: int


def check_strategies(names: tuple[str, ...]) -> tuple[str, ...]:
    for name in names:
        if name.startswith("hier:"):
            if name[5:] not in HIERARCHICAL:
                raise BertlensError(
                    f"unknown chunk classifier '{name}': {did_you_mean(name[5:], HIERARCHICAL)} (hier:KIND)"
                )
        elif parse_long_text(name).per_piece:
            raise BertlensError(
                f"'{name}' keeps one vector per chunk, for search (bertlens index); a classifier needs one vector per "
                "document: use mean, max, first or weighted"
            )
    if not names:
        raise BertlensError("no long-text strategies given")
    return names


def documents(task: TaskData) -> Split:
    """Every document of a classification task as one split (the comparison cross-validates)."""
    if not task.kind.single_text_classes:
        raise BertlensError(
            f"longdoc compares strategies on document classification; '{task.name}' is {task.kind.name}"
        )
    if "all" in task.splits:
        return task.splits["all"]
    parts = list(task.splits.values())
    return Split(tuple(t for p in parts for t in p.texts_a), None, np.concatenate([p.targets for p in parts]))


def _pass(name: str) -> LongText:
    """The encoding pass a strategy needs (windows aggregates and chunk classifiers share one)."""
    if name.startswith("hier:") or name.startswith("windows"):
        spec = parse_long_text(name) if name.startswith("windows") else LongText("windows")
        return LongText("windows", stride=spec.stride)
    return parse_long_text(name)


@dataclass(frozen=True)
class LongDocConfig:
    """How the strategies are scored: stratified cross-validation folds, the seed of folds and chunk classifiers,
    and the bootstrap's resamples for the intervals."""

    folds: int = 10
    seed: int = 0
    resamples: int = 1000


def compare_long_text(
    encoder: Encoder,
    recipe: Recipe,
    texts: list[str],
    labels: np.ndarray,
    strategies: tuple[str, ...],
    *,
    task: str = "task",
    config: LongDocConfig = LongDocConfig(),
    progress: Progress = silent,
) -> LongTextResult:
    """Each strategy's cross-validated accuracy with a 95% interval, every encoding pass shared where it can be."""
    folds, seed, resamples = config.folds, config.seed, config.resamples
    check_strategies(strategies)
    representation = Representation(recipe).eval()
    passes: dict[str, Pieces] = {}
    seconds: dict[str, float] = {}
    pass_of = {}
    for name in strategies:
        spec = _pass(name)
        key = spec.name.replace(":mean", "") if spec.kind == "windows" else spec.name
        pass_of[name] = key
        if key not in passes:
            start = time.perf_counter()
            passes[key] = encode_pieces(
                encoder,
                representation,
                texts,
                spec,
                progress=lambda stage, d, t, key=key: progress(f"encoding ({key})", d, t),
            )
            seconds[key] = time.perf_counter() - start
    n = len(texts)
    vector_names = [s for s in strategies if not s.startswith("hier:")]
    features = {s: passes[pass_of[s]].aggregate(n, parse_long_text(s).piece_aggregate) for s in vector_names}
    sequences = {
        key: ChunkSequences.build(p.vectors, p.doc_index, p.order, n)  # padded once, reused by every fold
        for key, p in passes.items()
        if any(pass_of[s] == key for s in strategies if s.startswith("hier:"))
    }
    stacked = torch.from_numpy(np.stack([features[s] for s in vector_names])) if vector_names else None  # [S, n, D]
    predictions = np.zeros((len(strategies), n), dtype=np.int64)
    for fold, part in enumerate(make_folds({"all": np.arange(n)}, labels, stratify=True, cv_folds=folds, seed=seed)):
        progress(counting("probing", "folds"), fold, folds)
        inner_train, inner_dev, test = part.train, part.dev, part.test
        if vector_names:
            rows = np.concatenate([inner_train, inner_dev, test])
            selected = logistic_on_dev(
                stacked[:, rows], len(inner_train), len(inner_dev), labels[inner_train], labels[inner_dev], C_GRID
            )  # [S, n_test]
            for k, s in enumerate(vector_names):
                predictions[strategies.index(s), test] = selected.predictions[k]
        for s in (s for s in strategies if s.startswith("hier:")):
            config = replace(CHUNK_DEFAULTS, seed=seed + fold)
            model = train_chunk_classifier(s[5:], sequences[pass_of[s]], labels, inner_train, inner_dev, config=config)
            predictions[strategies.index(s), test] = model.predict(sequences[pass_of[s]], test)
    progress(counting("probing", "folds"), folds, folds)
    intervals = bootstrap(predictions, labels, "accuracy", resamples=resamples, seed=seed)
    windows_pass = next((p for k, p in passes.items() if k.startswith("windows")), None)
    per_doc = len(windows_pass.doc_index) / n if windows_pass is not None else 1.0
    return LongTextResult(
        task, encoder.ref.name, strategies, intervals, seconds, pass_of, n, folds, per_doc, encoder.max_length
    )
