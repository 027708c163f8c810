"""Paired bootstrap over test examples: 95% intervals and ties with the best candidate.

All candidates share the same resamples, so differences between them are paired
(Efron & Tibshirani 1993; Dror et al. 2018 for NLP). A resample is represented by how many
times it draws each example (`counts` [B, n]); metrics become count-weighted sums, so no
resampled copy of the data is ever built. Spearman on a resample is the count-weighted
Pearson correlation of the ranks each item has within that resample (ties share the
average rank), which equals scipy's spearmanr on the materialised resample. Micro-F1 over label sets
(outputs [C, n, L] bool) resamples texts: a resample's F1 is 2 TP / (2 TP + FP + FN) from count-weighted sums of
each text's true positives, false positives and false negatives.
"""

from __future__ import annotations

import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from bertlens.errors import BertlensError
from bertlens.metrics.ranking import RANKING_METRICS

PER_EXAMPLE = RANKING_METRICS  # metrics that are a mean of per-example scores given as the outputs
METRICS = ("accuracy", "spearman", "micro_f1", *PER_EXAMPLE)  # what these intervals compute; any other name is refused
MIN_RESAMPLES = 20  # fewer draws leave a 95% interval's 2.5% tails without a draw of their own


@dataclass(frozen=True)
class Intervals:
    value: np.ndarray  # [C] point estimate on the full test set
    low: np.ndarray  # [C] 2.5th percentile (at 95%; (1 - confidence) / 2 in general)
    high: np.ndarray  # [C] 97.5th percentile
    tied_with_best: np.ndarray  # [C] bool: the interval of (best - candidate) includes 0
    best: int
    confidence: float = 0.95  # the intervals' level (a staged sweep widens it for its looks: metrics/sequential.py)


def accuracy(predictions: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """predictions [C, n] -> [C]."""
    return (predictions == gold[None]).mean(axis=-1)


def set_counts(predicted: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """predicted [..., n, L] and gold [n, L] bool -> each text's true positives, false positives and false
    negatives [..., n]."""
    predicted, gold = predicted.astype(bool), gold.astype(bool)
    tp = (predicted & gold).sum(-1)
    return tp, predicted.sum(-1) - tp, gold.sum(-1) - tp


def f1_from_counts(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    """2 TP / (2 TP + FP + FN), 0 where nothing was predicted nor expected (scikit-learn's zero_division=0)."""
    denominator = 2 * tp + fp + fn
    return np.where(denominator > 0, 2 * tp / np.where(denominator > 0, denominator, 1), 0.0)


def micro_f1(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """predicted [C, n, L], gold [n, L] -> micro-averaged F1 [C] (scikit-learn's f1_score(average='micro'))."""
    tp, fp, fn = set_counts(predicted, gold)
    return f1_from_counts(tp.sum(-1), fp.sum(-1), fn.sum(-1)).astype(np.float64)


def spearman(scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Spearman rho of each row of scores [..., n] with gold (broadcast); NaN for a constant row."""
    ranks = rankdata(scores, axis=-1)
    gold_ranks = rankdata(np.broadcast_to(gold, scores.shape), axis=-1)
    return _pearson(ranks, gold_ranks, None)


def _pearson(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """(Weighted) Pearson correlation along the last axis; NaN where either side is constant."""
    w = np.ones_like(x) if weights is None else weights
    total = w.sum(-1, keepdims=True)
    dx = x - (w * x).sum(-1, keepdims=True) / total
    dy = y - (w * y).sum(-1, keepdims=True) / total
    denominator = np.sqrt((w * dx * dx).sum(-1) * (w * dy * dy).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            denominator > 1e-12, (w * dx * dy).sum(-1) / np.where(denominator > 1e-12, denominator, 1), np.nan
        )


def _resample_ranks(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Rank of every item [B, n] within each count-weighted resample (average rank for ties)."""
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])  # first index of each tie group
    group_of = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(values)]))  # [n] in sorted order
    per_group = np.add.reduceat(counts[:, order], starts, axis=1)  # [B, G]
    below = np.cumsum(per_group, axis=1) - per_group  # [B, G]
    group_rank = below + (per_group + 1) / 2.0  # [B, G]
    ranks = np.empty(counts.shape, dtype=np.float64)
    ranks[:, order] = group_rank[:, group_of]
    return ranks


def check_resamples(resamples: int) -> int:
    """A resample count that can hold a 95% interval (the CLI's --resamples, a library caller's `resamples`)."""
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < MIN_RESAMPLES:
        raise BertlensError(
            f"--resamples must be a whole number of at least {MIN_RESAMPLES} (a 95% interval's tails need draws of "
            f"their own), got {resamples}"
        )
    return int(resamples)


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ValueError(f"no interval for metric {metric!r}: known are {', '.join(METRICS)}")


def _draws(units: int, resamples: int, seed: int) -> np.ndarray:
    check_resamples(resamples)
    rng = np.random.default_rng(seed)
    # float32 holds every count exactly (and sums of them up to 2^24): half the memory of float64 at 100k rows
    return np.stack([np.bincount(rng.integers(0, units, units), minlength=units) for _ in range(resamples)]).astype(
        np.float32
    )  # [B, units]


def bootstrap(
    outputs: np.ndarray,
    gold: np.ndarray,
    metric: str,
    *,
    resamples: int = 1000,
    seed: int = 0,
    groups: np.ndarray | None = None,
    confidence: float = 0.95,
) -> Intervals:
    """outputs [C, n]: predicted classes (accuracy), similarity scores (spearman), or each example's own
    score for a PER_EXAMPLE metric (a query's nDCG@10: the metric is their mean, `gold` is unused).

    groups [n] (accuracy only): resample whole groups, e.g. the sentences that words come
    from, since words of one sentence are not independent (a cluster bootstrap); accuracy on
    a resample is then correct words / words drawn.
    """
    if groups is not None:
        if metric != "accuracy":
            raise ValueError("grouped resampling is implemented for accuracy only")
        _, group = np.unique(groups, return_inverse=True)
        counts = _draws(int(group.max()) + 1, resamples, seed)  # [B, G]
        correct = np.stack(
            [
                np.bincount(group, weights=row, minlength=counts.shape[1])
                for row in (outputs == gold[None]).astype(np.float64)
            ]
        )  # [C, G]
        sizes = np.bincount(group, minlength=counts.shape[1]).astype(np.float64)  # [G]
        samples = (counts @ correct.T).T / (counts @ sizes)[None]  # [C, B]
        return intervals_from_samples(accuracy(outputs, gold), samples, confidence)
    return intervals_from_samples(*_value_and_samples(outputs, gold, metric, resamples, seed), confidence)


def point_estimates(outputs: np.ndarray, gold: np.ndarray, metric: str) -> np.ndarray:
    """Each row's score on the full test set [C]."""
    _check_metric(metric)
    if metric in PER_EXAMPLE:
        return outputs.mean(axis=-1)
    if metric == "micro_f1":
        return micro_f1(outputs, gold)
    return accuracy(outputs, gold) if metric == "accuracy" else spearman(outputs, gold)


def _value_and_samples(
    outputs: np.ndarray, gold: np.ndarray, metric: str, resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Point estimates [C] and resampled scores [C, B]; each row uses the same resamples, independently."""
    n = outputs.shape[1] if metric == "micro_f1" else outputs.shape[-1]  # label sets: [C, n, L]
    counts = _draws(n, resamples, seed)  # [B, n]
    value = point_estimates(outputs, gold, metric)
    if metric == "accuracy":
        correct = (outputs == gold[None]).T.astype(np.float32)  # [n, C]: float32 keeps the product exact and small
        return value, (counts @ correct).T.astype(np.float64) / n  # [C, B]
    if metric in PER_EXAMPLE:  # outputs are already each example's score (e.g. a query's nDCG@10)
        return value, (counts.astype(np.float64) @ outputs.T).T / n  # [C, B]
    if metric == "micro_f1":  # outputs [C, n, L]: per-text counts, summed with each resample's weights
        weighted = counts.astype(np.float64)  # [B, n]
        tp, fp, fn = (weighted @ c.T.astype(np.float64) for c in set_counts(outputs, gold))  # each [B, C]
        return value, f1_from_counts(tp, fp, fn).T  # [C, B]
    gold_ranks = _resample_ranks(gold, counts)  # [B, n]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # numpy releases the GIL: one core a row
        rows = pool.map(lambda row: _pearson(_resample_ranks(row, counts), gold_ranks, counts), outputs)
        return value, np.stack(list(rows))  # [C, B]


def bootstrap_with_extra(
    outputs: np.ndarray,
    extra: np.ndarray,
    gold: np.ndarray,
    metric: str,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[Intervals, Intervals]:
    """Intervals of the candidates `outputs` [C, n] and, from the same resamples (drawn once), of `extra`
    rows [E, n] judged apart (e.g. a cross-validated choice among the candidates)."""
    value, samples = _value_and_samples(np.vstack([outputs, extra]), gold, metric, resamples, seed)
    c = len(outputs)
    return (
        intervals_from_samples(value[:c], samples[:c], confidence),
        intervals_from_samples(value[c:], samples[c:], confidence),
    )


def tail_percent(confidence: float) -> float:
    """The percentile of a two-sided interval's lower end: 2.5 at 95%."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence} is not between 0 and 1")
    return 50.0 * (1.0 - confidence)


def intervals_from_samples(value: np.ndarray, samples: np.ndarray, confidence: float = 0.95) -> Intervals:
    """Percentile intervals from scores on shared resamples (or subsamples) [C, B]; ties via paired differences
    with the best."""
    finite = np.where(np.isfinite(value), value, -np.inf)
    best = int(np.argmax(finite))
    diff = samples[best][None] - samples  # [C, B]
    tail = tail_percent(confidence)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows (constant vectors) stay NaN
        low, high = np.nanpercentile(samples, tail, axis=1), np.nanpercentile(samples, 100 - tail, axis=1)
        tied = (np.nanpercentile(diff, tail, axis=1) <= 0) & np.isfinite(value)
    return Intervals(value, low, high, tied, best, confidence)


def paired_difference(
    outputs: np.ndarray, gold: np.ndarray, metric: str, *, resamples: int = 1000, seed: int = 0
) -> tuple[float, float, float]:
    """outputs [2, n]: (score of row 1 - score of row 0, 2.5th and 97.5th percentile over shared resamples)."""
    value, samples = _value_and_samples(outputs, gold, metric, resamples, seed)
    diff = samples[1] - samples[0]  # [B]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(value[1] - value[0]), float(np.nanpercentile(diff, 2.5)), float(np.nanpercentile(diff, 97.5))


def gaps_to(
    outputs: np.ndarray,
    gold: np.ndarray | None,
    metric: str,
    pick: int,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """How far each candidate may be ahead of `pick`: (score_c - score_pick [C], the upper end of its paired interval
    at `confidence` [C]), from shared resamples of `outputs` [C, n]. NaN where a score is undefined."""
    value, samples = _value_and_samples(outputs, gold, metric, resamples, seed)
    diff = samples - samples[pick][None]  # [C, B]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return value - value[pick], np.nanpercentile(diff, 100 - tail_percent(confidence), axis=1)
