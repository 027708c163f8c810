"""Label-free measures of a set of vectors: what can be said about a representation from texts alone.

- effective rank (Roy & Vetterli 2007), as RankMe uses it to judge embeddings without labels
  (Garrido et al. 2023, arXiv 2210.02885): exp of the Shannon entropy of the singular values
  normalised to sum to 1; between 1 (one direction) and min(n, D) (a flat spectrum). Here of the
  L2-normalised vectors (what cosine compares; RankMe takes them raw), so that one spectrum gives
  both measures
- matrix entropy (Giraldo et al. 2014; Skean et al. 2025, arXiv 2502.02013, "dataset entropy"):
  von Neumann entropy of the trace-normalised Gram matrix of the L2-normalised vectors, divided
  by log(min(n, D)) so it lies in [0, 1]
- anisotropy, alignment and uniformity: metrics/geometry.py (Ethayarajh 2019; Wang & Isola 2020)

Each is a property of one candidate's vectors; the sweep compares candidates by them
(probing/label_free.py).
"""

from __future__ import annotations

import numpy as np
import torch

EPSILON = 1e-12
FLOAT32_NOISE = 1e-6  # eigenvalues below this share of the largest are float32 rounding, not spread


def spectrum(x: np.ndarray) -> np.ndarray:
    """Eigenvalues of Z Z^T (descending), Z the L2-normalised rows of x [n, D]: the squared singular values of Z,
    from the smaller side's Gram matrix. float32 (3x faster than float64 at D = 1536; entropies of the spectrum
    agree to 1e-5)."""
    z = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), EPSILON)
    t = torch.from_numpy(np.ascontiguousarray(z, dtype=np.float32))  # [n, D]
    gram = t @ t.T if t.shape[0] <= t.shape[1] else t.T @ t  # [m, m], m = min(n, D)
    eigen = torch.linalg.eigvalsh(gram).flip(0).double().numpy()  # [m]
    return np.where(eigen > FLOAT32_NOISE * eigen[0], eigen, 0.0)  # rounding noise of float32 is not a direction


def effective_rank(eigen: np.ndarray) -> float:
    """exp(-sum p log p), p = sigma / sum(sigma), sigma = sqrt of a spectrum (RankMe's effective rank)."""
    sigma = np.sqrt(np.clip(eigen, 0, None))
    total = sigma.sum()
    if total <= EPSILON:
        return float("nan")
    p = sigma / total + EPSILON
    return float(np.exp(-(p * np.log(p)).sum()))


def matrix_entropy(eigen: np.ndarray) -> float:
    """Von Neumann entropy of the trace-normalised Gram matrix from its spectrum, divided by log(len(spectrum)), so
    in [0, 1] (len(spectrum) = min(n, D))."""
    total = eigen.sum()
    if total <= EPSILON or len(eigen) < 2:
        return float("nan")
    lam = eigen[eigen > EPSILON * total] / total
    return float(-(lam * np.log(lam)).sum() / np.log(len(eigen)))
