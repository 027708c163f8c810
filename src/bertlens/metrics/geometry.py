"""Anisotropy diagnostics of an encoder's vector space, per layer (and per pooler for sentences).

- random-pair cosine: mean cosine of random sentence pairs / random token pairs from different
  sentences; near 0 for an isotropic space, high when all vectors share a cone (Ethayarajh 2019)
- self-similarity: mean cosine between occurrences of the same word type in different
  sentences; intra-sentence similarity: mean cosine of a sentence's tokens to its mean
  (Ethayarajh 2019, "How contextual are contextualized word representations?"); both also
  given minus the random-token cosine (his anisotropy adjustment)
- variance explained by the top 1 and top 10 principal components of the sentence vectors
- rogue dimensions: the dimensions that contribute most to the mean random-pair cosine
  (Timkey & van Schijndel 2021), with their share of it
- alignment E||f(x) - f(y)||^2 over positive pairs and uniformity log E exp(-2 ||f(x) - f(y)||^2)
  over random pairs, on L2-normalised vectors (Wang & Isola 2020)
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np


def row_cosine(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cosine of each row of u with the same row of v: [n]."""
    return (u * v).sum(1) / np.maximum(np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1), 1e-12)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def random_pairs(
    n: int, count: int, rng: np.random.Generator, groups: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """`count` index pairs (i, j), i != j (and from different groups when groups are given)."""
    i = rng.integers(0, n, count * 2)
    j = rng.integers(0, n, count * 2)
    keep = i != j if groups is None else groups[i] != groups[j]
    return i[keep][:count], j[keep][:count]


def mean_pair_cosine(x: np.ndarray, i: np.ndarray, j: np.ndarray) -> float:
    u, v = _unit(x[i]), _unit(x[j])
    return float((u * v).sum(axis=1).mean())


def rogue_dimensions(x: np.ndarray, i: np.ndarray, j: np.ndarray, top: int = 3) -> list[tuple[int, float]]:
    """(dimension, share of the mean cosine) for the `top` largest contributors."""
    u, v = _unit(x[i]), _unit(x[j])
    contribution = (u * v).mean(axis=0)  # [D]: their sum is the mean cosine
    total = contribution.sum()
    order = np.argsort(-np.abs(contribution))[:top]
    return [(int(d), float(contribution[d] / total) if total else float("nan")) for d in order]


def variance_explained(x: np.ndarray, components: int) -> float:
    centred = x - x.mean(axis=0)
    values = np.linalg.svd(centred, compute_uv=False) ** 2
    return float(values[:components].sum() / values.sum()) if values.sum() > 0 else float("nan")


def alignment(x: np.ndarray, y: np.ndarray) -> float:
    """Wang & Isola (2020) alignment (alpha = 2) of positive pairs x[k] ~ y[k]; lower is better."""
    return float((np.linalg.norm(_unit(x) - _unit(y), axis=1) ** 2).mean())


def uniformity(x: np.ndarray, i: np.ndarray, j: np.ndarray) -> float:
    """Wang & Isola (2020) uniformity (t = 2) over random pairs; lower (more negative) is more uniform."""
    u = _unit(x)
    distance = np.linalg.norm(u[i] - u[j], axis=1) ** 2
    return float(np.log(np.exp(-2 * distance).mean()))


def self_similarity(
    tokens: np.ndarray,
    types: np.ndarray,
    sentence: np.ndarray,
    rng: np.random.Generator,
    min_contexts: int = 5,
    max_types: int = 500,
) -> float:
    """Mean over word types (seen in >= min_contexts sentences) of the mean pairwise cosine of their occurrences."""
    by_type: dict[int, list[int]] = defaultdict(list)
    seen: set[tuple[int, int]] = set()
    for row, (t, s) in enumerate(zip(types, sentence)):
        if (t, s) not in seen:  # one occurrence per sentence: contexts, not repeats
            seen.add((t, s))
            by_type[int(t)].append(row)
    eligible = sorted(t for t, rows in by_type.items() if len(rows) >= min_contexts)
    if not eligible:
        return float("nan")
    chosen = rng.choice(eligible, min(max_types, len(eligible)), replace=False)
    values = []
    for t in chosen:
        u = _unit(tokens[by_type[int(t)][:50]])  # [m, D]
        gram = u @ u.T
        m = len(u)
        values.append((gram.sum() - m) / (m * (m - 1)))
    return float(np.mean(values))


def intra_sentence_similarity(tokens: np.ndarray, sentence: np.ndarray) -> float:
    """Mean cosine between each token and its sentence's mean token vector, averaged over sentences."""
    values = []
    for s in np.unique(sentence):
        rows = tokens[sentence == s]
        if len(rows) > 1:
            values.append(float((_unit(rows) @ _unit(rows.mean(axis=0))).mean()))
    return float(np.mean(values)) if values else float("nan")
