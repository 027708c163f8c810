"""Label-free scores of every sweep candidate, from the texts alone: which layer and pooler to use without labels.

From the one feature bank (clean vectors) and three small view banks of a sample of the texts (two
dropout views, SimCSE's positives, Gao et al. 2021; one word-dropout view), each candidate gets:
effective rank and matrix entropy (metrics/label_free.py), anisotropy and uniformity over random
pairs, and alignment under each augmentation (metrics/geometry.py; Wang & Isola 2020).

The scores are computed on SUBSAMPLES seeded subsamples of the texts, the same for every
candidate, so their spread is paired across candidates (as the clustering protocol). The combined
score is a weighted mean of per-subsample rank percentiles across candidates (each component
turned so higher is better): ranks make components of different units comparable and are
invariant to any monotone rescaling. Its form (COMBINED) was chosen on the catalog tasks' dev
scores and is written down in docs/results-log.md with what it achieves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from bertlens.features.bank import Bank
from bertlens.features.views import Views
from bertlens.metrics.bootstrap import Intervals, intervals_from_samples
from bertlens.metrics.geometry import random_pairs, row_cosine
from bertlens.metrics.label_free import effective_rank, matrix_entropy, spectrum
from bertlens.probing.candidates import Candidate, candidate_features
from bertlens.probing.cores import map_on_cores
from bertlens.progress import Progress, counting, silent

SUBSAMPLES = 5
SUBSAMPLE_SIZE = 2000  # texts per subsample for anisotropy and uniformity
SPECTRUM_SIZE = 1000  # of those, the first this many give the spectrum (effective rank, matrix entropy): an
# eigen-decomposition of a 1536-wide candidate costs 4x less at 1,000 rows than at 2,000
POOL_SIZE = 4000  # texts the subsamples are drawn from (a seeded sample when there are more)
PAIRS = 5000  # random pairs per subsample for anisotropy and uniformity
VIEW_TEXTS = 500  # texts encoded again as views (at most; see view_count)

HIGHER_IS_BETTER = {
    "effective_rank": True,
    "matrix_entropy": True,
    "anisotropy": False,
    "uniformity": False,
    "alignment_dropout": False,
    "alignment_words": False,
}
COMPONENTS = tuple(HIGHER_IS_BETTER)
# The combined score's form, chosen among every single component, every pair and all six by the smallest mean
# validation regret of its pick over 27 catalog cells (9 tasks x 3 models; `bench/label_free_trust.py analyse`,
# docs/results-log.md "Choosing without labels"); leaving any one task out chooses the same form.
COMBINED = {"uniformity": 1.0}
CATALOG_TRUST = (
    "measured on 27 catalog task x model cells: the label-free pick was at least as good as the last-layer default "
    "in 24 (89%) and within the labelled best's interval in 10 (37%; the 50% target is missed), docs/results-log.md"
)


def view_count(texts: int) -> int:
    """How many texts get augmented views: a tenth of them (three view passes then cost 0.3 of an encode pass),
    at least 64 (or all), at most VIEW_TEXTS."""
    return min(texts, VIEW_TEXTS, max(64, texts // 10))


@dataclass(frozen=True)
class LabelFreeScores:
    candidates: tuple[Candidate, ...]
    components: dict[str, np.ndarray]  # name -> [C, B] raw value per subsample (NaN: undefined)
    combined: np.ndarray  # [C, B] weighted mean of direction-adjusted rank percentiles
    form: dict[str, float]  # the combined score's weights

    def value(self, name: str) -> np.ndarray:
        """[C] mean over subsamples of a component (raw units) or of 'combined'."""
        samples = self.combined if name == "combined" else self.components[name]
        with np.errstate(invalid="ignore"):
            return samples.mean(axis=1)

    def intervals(self) -> Intervals:
        """The combined score's spread over the subsamples, ties with the best paired over them."""
        return intervals_from_samples(self.value("combined"), self.combined)

    def pick(self, hidden_size: int) -> int:
        """The candidate with the best combined score; ties: fewer dimensions, then a single layer (as the sweep)."""
        value = self.value("combined")
        defined = [i for i in range(len(value)) if np.isfinite(value[i])]
        if not defined:
            raise ValueError("no candidate has a defined label-free score (constant vectors?)")
        return min(
            defined,
            key=lambda i: (
                -round(value[i], 6),
                self.candidates[i].width(hidden_size),
                self.candidates[i].mixer != "single",
            ),
        )


def oriented(name: str, values: np.ndarray) -> np.ndarray:
    """A component turned so that higher is better."""
    return values if HIGHER_IS_BETTER[name] else -values


def combine(components: dict[str, np.ndarray], form: dict[str, float]) -> np.ndarray:
    """[C, B]: per subsample, the weighted mean over `form` of each component's rank percentile across candidates
    (1 = best); a candidate undefined in any used component is undefined."""
    total = sum(form.values())
    combined = np.zeros_like(next(iter(components.values())))
    undefined = np.zeros(combined.shape, dtype=bool)
    for name, weight in form.items():
        values = oriented(name, components[name])  # [C, B]
        undefined |= ~np.isfinite(values)
        ranks = rankdata(np.where(np.isfinite(values), values, -np.inf), axis=0)  # [C, B], average ranks for ties
        combined += weight * (ranks - 1) / max(len(values) - 1, 1)
    return np.where(undefined, np.nan, combined / total)


def _draws(rows: np.ndarray, views: int, seed: int) -> tuple[np.ndarray, list[np.ndarray], list, list[np.ndarray]]:
    """The row pool, subsamples (positions into the pool), random pairs and view resamples for each subsample."""
    rng = np.random.default_rng(seed)
    pool = np.sort(rng.choice(rows, min(len(rows), POOL_SIZE), replace=False))
    size = min(SUBSAMPLE_SIZE, max(len(pool) // 2, 2))
    subsamples = [np.sort(rng.choice(len(pool), size, replace=False)) for _ in range(SUBSAMPLES)]
    pairs = [random_pairs(size, PAIRS, rng) for _ in range(SUBSAMPLES)]
    resamples = [rng.integers(0, views, views) for _ in range(SUBSAMPLES)]
    return pool, subsamples, pairs, resamples


def _alignment(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per row, ||u/|u| - v/|v|||^2 = 2 - 2 cos: [n] (Wang & Isola's alignment before the mean)."""
    return 2.0 - 2.0 * row_cosine(u, v)


def _pair_measures(unit: np.ndarray, i: np.ndarray, j: np.ndarray) -> tuple[float, float]:
    """(anisotropy, uniformity) over pairs (i, j) of unit vectors [n, D]: the mean cosine (Ethayarajh 2019) and
    log E exp(-2 ||u_i - u_j||^2) (Wang & Isola 2020, t = 2), from one product per pair."""
    cosine = np.einsum("nd,nd->n", unit[i], unit[j])  # [pairs]
    return float(cosine.mean()), float(np.log(np.exp(-2.0 * (2.0 - 2.0 * cosine)).mean()))


def _constant(x: np.ndarray) -> bool:
    return bool(np.abs(x - x[:1]).max() <= 1e-6 * (np.abs(x).max() + 1e-12))


def score_label_free(
    bank: Bank,
    candidates: list[Candidate],
    rows: np.ndarray,
    views: Views,
    seed: int = 0,
    form: dict[str, float] = COMBINED,
    progress: Progress = silent,
) -> LabelFreeScores:
    """Every component for every candidate on SUBSAMPLES subsamples of bank `rows` (texts only: no label is read).

    Candidates are scored side by side, one per core (each with one torch thread: the eigen-decompositions and
    products release the GIL), in a deterministic order of results."""
    pool, subsamples, pairs, resamples = _draws(rows, len(views.rows), seed)
    components = {name: np.full((len(candidates), SUBSAMPLES), np.nan) for name in COMPONENTS}

    def score(candidate: Candidate) -> dict[str, np.ndarray] | None:
        x = candidate_features(bank, candidate, pool)  # [P, D]
        clean = candidate_features(bank, candidate, views.rows)  # [V, D]
        if _constant(x) or _constant(clean):
            return None  # e.g. [CLS] of the embedding layer: every text gets the same vector
        unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)  # [P, D]
        first, second = (candidate_features(view, candidate) for view in views.dropout)  # [V, D] each
        by_dropout = _alignment(first, second)  # [V]
        by_words = _alignment(clean, candidate_features(views.words, candidate))  # [V]
        out = {name: np.empty(SUBSAMPLES) for name in COMPONENTS}
        for b, (sample, (i, j), resample) in enumerate(zip(subsamples, pairs, resamples)):
            eigen = spectrum(x[sample][:SPECTRUM_SIZE])  # [min(S, D)]
            out["effective_rank"][b] = effective_rank(eigen)
            out["matrix_entropy"][b] = matrix_entropy(eigen)
            out["anisotropy"][b], out["uniformity"][b] = _pair_measures(unit[sample], i, j)
            out["alignment_dropout"][b] = by_dropout[resample].mean()
            out["alignment_words"][b] = by_words[resample].mean()
        return out

    results = map_on_cores(
        score, candidates, lambda done, total: progress(counting("label-free scores", "candidates"), done, total)
    )
    for c, result in enumerate(results):
        for name, values in (result or {}).items():
            components[name][c] = values
    return LabelFreeScores(tuple(candidates), components, combine(components, form), dict(form))
