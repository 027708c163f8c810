"""Token vectors reduced to fewer dimensions, so a multi-vector index's size is a measured trade-off (issue #52).

A late-interaction index stores every kept token's vector: at 768 dimensions in float16 that is 1.5 KB a token.
ColBERT learns a projection to 128 (Khattab & Zaharia 2020, sec. 3.1); without training, two fixed maps do it:
- `pca`: the top principal directions of the corpus' token vectors (centred first), fitted on a seeded sample;
- `random`: a seeded random orthonormal map (Johnson & Lindenstrauss 1984: distances, hence cosines, are kept
  approximately; nothing is fitted, so it needs no corpus).
Saved as one safetensors file (mean [H], components [H, d]) that a multi-vector recipe names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertlens.errors import BertlensError
from bertlens.io.arrays import read_arrays, save_arrays
from bertlens.representation.late_interaction import PackedTokens

TOKEN_DIM = 128  # ColBERT's width
REDUCTIONS = ("pca", "random")
FIT_TOKENS = 100_000  # corpus tokens sampled to fit a PCA (the fit's cost stays flat with the corpus)
PROJECTION_VERSION = "1"


@dataclass(frozen=True)
class TokenProjection:
    """x -> (x - mean) @ components: [n, H] -> [n, d]."""

    kind: str
    mean: np.ndarray  # [H] float32 (zeros for a random map)
    components: np.ndarray  # [H, d] float32

    @property
    def dim(self) -> int:
        return int(self.components.shape[1])

    @property
    def input_dim(self) -> int:
        return int(self.components.shape[0])

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """[n, H] -> [n, d] float32."""
        if vectors.shape[1] != self.input_dim:
            raise BertlensError(
                f"the token projection takes {self.input_dim}-dimensional vectors, got {vectors.shape[1]}; refit it "
                "for this model"
            )
        return (np.asarray(vectors, dtype=np.float32) - self.mean) @ self.components  # [n, d]

    def packed(self, tokens: PackedTokens) -> PackedTokens:
        """Every text's token vectors projected: [T, H] -> [T, d], the same offsets."""
        return PackedTokens(self.apply(tokens.vectors), tokens.offsets)

    def save(self, path: str | Path) -> Path:
        arrays = {"mean": self.mean, "components": self.components}
        return save_arrays(path, arrays, {"version": PROJECTION_VERSION, "kind": self.kind})

    @classmethod
    def load(cls, path: str | Path) -> TokenProjection:
        arrays, meta = read_arrays(path, "token projection file")
        if meta.get("version") != PROJECTION_VERSION or set(arrays) != {"mean", "components"}:
            raise BertlensError(f"{path}: not a bertlens token projection (version {meta.get('version')!r})")
        return cls(meta.get("kind", "pca"), arrays["mean"].astype(np.float32), arrays["components"].astype(np.float32))


def random_projection(hidden: int, dim: int = TOKEN_DIM, seed: int = 0) -> TokenProjection:
    """A seeded random orthonormal [H, d] map (QR of a Gaussian matrix)."""
    if not 1 <= dim <= hidden:
        raise BertlensError(f"a token projection to {dim} dimensions needs 1..{hidden}")
    gaussian = np.random.default_rng(seed).standard_normal((hidden, dim))  # [H, d]
    q, _ = np.linalg.qr(gaussian)  # [H, d], orthonormal columns
    return TokenProjection("random", np.zeros(hidden, dtype=np.float32), q.astype(np.float32))


def fit_pca(vectors: np.ndarray, dim: int = TOKEN_DIM, seed: int = 0) -> TokenProjection:
    """The top `dim` principal directions of `vectors` [T, H] (a seeded sample of FIT_TOKENS rows when larger)."""
    from sklearn.decomposition import PCA

    hidden = vectors.shape[1]
    if not 1 <= dim <= hidden or len(vectors) < dim:
        raise BertlensError(f"a PCA to {dim} dimensions needs at least {dim} token vectors of width >= {dim}")
    rows = np.arange(len(vectors))
    if len(rows) > FIT_TOKENS:
        rows = np.sort(np.random.default_rng(seed).choice(len(rows), FIT_TOKENS, replace=False))
    sample = np.asarray(vectors[rows], dtype=np.float32)  # [n, H]
    pca = PCA(n_components=dim, svd_solver="randomized", random_state=seed).fit(sample)
    return TokenProjection("pca", pca.mean_.astype(np.float32), pca.components_.T.astype(np.float32))


def make_projection(kind: str, vectors: np.ndarray, dim: int = TOKEN_DIM, seed: int = 0) -> TokenProjection:
    """`kind` in REDUCTIONS; `vectors` [T, H] are the corpus' tokens (read by pca only)."""
    if kind == "pca":
        return fit_pca(vectors, dim, seed)
    if kind == "random":
        return random_projection(vectors.shape[1], dim, seed)
    raise BertlensError(f"unknown token reduction '{kind}': use one of {', '.join(REDUCTIONS)}")
