"""Clustering as a protocol: V-measure of k-means with k = the number of labels, per candidate, as MTEB does.

V-measure is the harmonic mean of homogeneity and completeness of the clusters against the labels
(Rosenberg & Hirschberg 2007). Labels never reach the clustering; they only score it. Like MTEB's
fast clustering evaluation, k-means runs on seeded subsamples of the texts, the same subsamples for
every candidate, so the spread over them is paired across candidates.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from sklearn.cluster import MiniBatchKMeans
from sklearn.metrics import v_measure_score

from bertlens.progress import Progress, counting, silent

SUBSAMPLES = 10
SUBSAMPLE_SIZE = 4000  # texts per subsample (all of them when fewer)
BATCH = 500  # MiniBatchKMeans batch size, as MTEB


def subsamples(labels: np.ndarray, seed: int, count: int = SUBSAMPLES, size: int = SUBSAMPLE_SIZE) -> list[np.ndarray]:
    """`count` seeded row sets of min(size, n) rows each, sorted."""
    rng = np.random.default_rng(seed)
    take = min(size, len(labels))
    return [np.sort(rng.choice(len(labels), take, replace=False)) for _ in range(count)]


def v_measures(
    features: Callable[[int, np.ndarray], np.ndarray],
    candidates: int,
    labels: np.ndarray,
    seed: int = 0,
    progress: Progress = silent,
) -> np.ndarray:
    """V-measure [C, B] of each candidate on each subsample; `features(i, rows)` gives candidate i's [n, D] vectors.
    NaN where a candidate's vectors are constant (k-means finds fewer clusters than k)."""
    rows = subsamples(labels, seed)
    k = len(np.unique(labels))
    out = np.full((candidates, len(rows)), np.nan)
    for i in range(candidates):
        progress(counting("clustering", "candidates"), i, candidates)
        for b, sample in enumerate(rows):
            x = features(i, sample)  # [n, D]
            if np.ptp(x, axis=0).max() <= 1e-6:
                break
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # fewer distinct points than clusters: sklearn warns, the score stands
                model = MiniBatchKMeans(n_clusters=k, batch_size=BATCH, n_init="auto", random_state=seed + b)
                out[i, b] = v_measure_score(labels[sample], model.fit_predict(x))
    progress(counting("clustering", "candidates"), candidates, candidates)
    return out
