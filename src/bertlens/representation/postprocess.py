"""Post-processing of sentence vectors: fitted on a corpus, saved, applied by every Recipe that names it.

Steps (a pipeline, fitted in order on the fitting vectors):
  center        x - mu
  whiten[:K]    (x - mu) U_K diag(s_K)^-1/2, with cov = U diag(s) U^T (Su et al. 2021, "Whitening
                sentence representations"); K components kept (default: all). The fitting vectors
                then have identity covariance.
  abtt[:D]      all-but-the-top (Mu & Viswanath 2018): centre, then remove the projections on the
                top D principal directions (default D = dim / 100, at least 1)
  normalize     x / ||x||
  linear        x W + b, learned elsewhere (a distilled student's projection to its teacher's space,
                `PostProcessor.affine`); not fitted from vectors, so `bertlens postprocess` does not offer it

Saved as one safetensors file (tensors per step) whose metadata holds the step list as JSON;
nothing is pickled.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bertlens.errors import BertlensError, did_you_mean
from bertlens.io.arrays import read_arrays, save_arrays

STEPS = ("center", "whiten", "abtt", "normalize")  # fitted from vectors
LEARNED = ("linear",)  # trained by an objective, stored in the same file format
POSTPROCESS_VERSION = 1
RANK_TOLERANCE = 1e-10  # eigenvalues below this share of the largest count as zero variance


@dataclass(frozen=True)
class Step:
    kind: str
    k: int | None = None  # whiten: components kept; abtt: directions removed

    @property
    def name(self) -> str:
        return self.kind if self.k is None else f"{self.kind}:{self.k}"


def parse_steps(text: str) -> tuple[Step, ...]:
    """'center,whiten:256,normalize' -> steps."""
    steps = []
    for item in (s.strip() for s in text.split(",") if s.strip()):
        kind, _, arg = item.partition(":")
        if kind in LEARNED:
            raise BertlensError(
                f"post-processing step '{kind}' is learned by training (e.g. `bertlens distill`), not fitted"
            )
        if kind not in STEPS:
            raise BertlensError(f"unknown post-processing step '{kind}': {did_you_mean(kind, STEPS)}")
        k = None
        if arg:
            if kind not in ("whiten", "abtt"):
                raise BertlensError(f"post-processing step '{kind}' takes no argument (got '{item}')")
            if not arg.isdigit() or int(arg) < 1:
                raise BertlensError(f"'{item}': the number after ':' must be a positive integer")
            k = int(arg)
        steps.append(Step(kind, k))
    if not steps:
        raise BertlensError("no post-processing steps given; e.g. whiten or center,abtt,normalize")
    return tuple(steps)


def _top_directions(x: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues [count] and eigenvectors [D, count] of the covariance of centred x, largest first."""
    cov = x.T @ x / len(x)  # [D, D]
    values, vectors = np.linalg.eigh(cov)
    order = np.argsort(values)[::-1][:count]
    return values[order], vectors[:, order]


STEP_ARRAYS = {"whiten": ("transform",), "abtt": ("directions",), "linear": ("weight", "bias")}  # besides a mean


@dataclass(frozen=True)
class PostProcessor:
    """Fitted pipeline: `transform(x [n, D]) -> [n, D']`."""

    steps: tuple[Step, ...]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # "<i>.<name>" -> array
    dim: int = 0
    fitted_on: int = 0

    @property
    def name(self) -> str:
        return ",".join(s.name for s in self.steps)

    @property
    def output_dim(self) -> int:
        for i in reversed(range(len(self.steps))):
            for name in ("transform", "weight"):
                if f"{i}.{name}" in self.arrays:
                    return self.arrays[f"{i}.{name}"].shape[1]
        return self.dim

    @classmethod
    def affine(cls, weight: np.ndarray, bias: np.ndarray, normalize: bool = False) -> PostProcessor:
        """x -> x W + b (weight [D_in, D_out], bias [D_out]), then optionally x / ||x||."""
        steps = (Step("linear"),) + ((Step("normalize"),) if normalize else ())
        arrays = {"0.weight": np.asarray(weight, dtype=np.float64), "0.bias": np.asarray(bias, dtype=np.float64)}
        return cls(steps, arrays, int(weight.shape[0]), 0)

    @classmethod
    def fit(cls, steps: tuple[Step, ...], vectors: np.ndarray) -> PostProcessor:
        x = np.asarray(vectors, dtype=np.float64)
        n, dim = x.shape
        arrays: dict[str, np.ndarray] = {}
        for i, step in enumerate(steps):
            if step.kind in ("center", "whiten", "abtt"):
                mean = x.mean(axis=0)
                arrays[f"{i}.mean"] = mean
                x = x - mean
            if step.kind == "whiten":
                k = step.k or x.shape[1]
                if k > x.shape[1]:
                    raise BertlensError(f"whiten:{k} keeps more components than the {x.shape[1]} dimensions")
                spectrum, eigenvectors = np.linalg.eigh(x.T @ x / n)  # ascending; one decomposition serves both
                if (
                    step.k is None and n > k
                ):  # all components that have variance (constant dimensions cannot be whitened)
                    rank = int((spectrum > RANK_TOLERANCE * spectrum.max()).sum())
                    if rank == 0:
                        raise BertlensError("whiten: the fitting vectors are all the same; there is nothing to whiten")
                    if rank < k:
                        warnings.warn(
                            f"whiten: the fitting vectors vary in only {rank} of {k} directions; "
                            f"keeping {rank} components",
                            stacklevel=2,
                        )
                    k = rank
                if n <= k:
                    raise BertlensError(
                        f"whitening with {k} components needs more than {k} fitting texts, got {n}: "
                        f"fit on more texts or keep fewer components (whiten:K with K < {n})"
                    )
                order = np.argsort(spectrum)[::-1][:k]
                values, vectors_ = spectrum[order], eigenvectors[:, order]
                if values[-1] <= RANK_TOLERANCE * values[0]:
                    raise BertlensError(
                        f"whiten:{k}: the fitting vectors span fewer than {k} directions; keep fewer components"
                    )
                transform = vectors_ / np.sqrt(values)  # [D, k]
                arrays[f"{i}.transform"] = transform
                if i < len(steps) - 1:  # later steps read the whitened vectors
                    x = x @ transform
            elif step.kind == "abtt":
                d = step.k or max(1, x.shape[1] // 100)
                if d >= min(n, x.shape[1]):
                    raise BertlensError(
                        f"abtt:{d} removes too many directions for {n} texts of {x.shape[1]} dimensions"
                    )
                _, directions = _top_directions(x, d)
                arrays[f"{i}.directions"] = directions
                x = x - (x @ directions) @ directions.T
            elif step.kind == "normalize":
                x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        return cls(steps, {k: v.astype(np.float64) for k, v in arrays.items()}, dim, n)

    def transform(self, vectors: np.ndarray, dtype=np.float64) -> np.ndarray:
        """The fitted steps applied; `dtype` is the arithmetic (float64 by default: what a recipe serves; float32
        halves the cost where only a ranking is read, as in a retrieval sweep over a large corpus)."""
        x = np.asarray(vectors, dtype=dtype)
        if x.shape[1] != self.dim:
            raise BertlensError(
                f"post-processor was fitted on {self.dim}-dimensional vectors, got {x.shape[1]}; "
                "it belongs to another recipe or model"
            )
        for i, step in enumerate(self.steps):
            arrays = {
                key: self.arrays[f"{i}.{key}"].astype(dtype, copy=False) for key in STEP_ARRAYS.get(step.kind, ())
            }
            if f"{i}.mean" in self.arrays:
                x = x - self.arrays[f"{i}.mean"].astype(dtype, copy=False)
            if step.kind == "whiten":
                x = x @ arrays["transform"]
            elif step.kind == "abtt":
                x = x - (x @ arrays["directions"]) @ arrays["directions"].T
            elif step.kind == "linear":
                x = x @ arrays["weight"] + arrays["bias"]
            elif step.kind == "normalize":
                x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        return x.astype(np.float32)

    def save(self, path: str | Path) -> Path:
        meta = {
            "version": str(POSTPROCESS_VERSION),
            "steps": json.dumps([[s.kind, s.k] for s in self.steps]),
            "dim": str(self.dim),
            "fitted_on": str(self.fitted_on),
        }
        return save_arrays(path, self.arrays, meta)

    @classmethod
    def load(cls, path: str | Path) -> PostProcessor:
        arrays, meta = read_arrays(path, "post-processor file")
        if meta.get("version") != str(POSTPROCESS_VERSION):
            raise BertlensError(f"{path}: not a bertlens post-processor (version {meta.get('version')!r})")
        steps = tuple(Step(kind, k) for kind, k in json.loads(meta["steps"]))
        unknown = [s.kind for s in steps if s.kind not in STEPS + LEARNED]
        if unknown:
            raise BertlensError(f"{path}: unknown post-processing step '{unknown[0]}' (made by a newer bertlens?)")
        return cls(steps, arrays, int(meta["dim"]), int(meta["fitted_on"]))
