"""The softmax probe's curvature as a Kronecker product: L-BFGS's first guess at the inverse Hessian.

The Hessian of mean cross-entropy in the coefficients coef [D, K] of a linear softmax model is
(1/n) sum_i (x_i x_i') (x) H_i, H_i = diag(p_i) - p_i p_i'. K-FAC (Martens & Grosse, *Optimizing Neural Networks
with Kronecker-factored Approximate Curvature*, ICML 2015) takes it as E[x x'] (x) E[H]. In the probes' whitened basis
E[x x'] is the identity (probing/logistic.py), so with the L2 penalty (diagonal, 2 pen_j for feature j) the
approximation is block diagonal: feature j's K coefficients have the curvature Hbar + 2 pen_j I, and one
eigendecomposition Hbar = U diag(a) U' solves every block: (Hbar + 2 pen_j I)^-1 = U diag(1 / (a + 2 pen_j)) U'. The
bias's block is Hbar itself (no penalty; its zero eigenvalue, the softmax's shift of every logit, is left out).

Why: the penalty pen_j = 1 / (2 C n lam_j) spans the whitening's eigenvalues lam_j (five orders of magnitude on BERT
features), a spread a scalar first guess cannot hold and 20 L-BFGS pairs learn slowly. Measured on the 100k cloze's
1536-wide fit (docs/results-log.md, issue #75 fourteenth part): the objective the plain L-BFGS reaches in 50 steps
in 18 steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

NULL = 1e-6  # eigenvalues of Hbar at most this fraction of its largest are its null space (the shift of every logit)


@dataclass(frozen=True)
class SoftmaxCurvature:
    """Hbar = U diag(a) U' per candidate (rotation [C, K, K], values [C, K]) and the penalty [C, D, K] (constant
    along K: one strength)."""

    rotation: torch.Tensor
    values: torch.Tensor
    penalty: torch.Tensor

    def solve(self, coef: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The approximate Hessian's inverse applied to (coef [C, D, K], bias [C, 1, K])."""
        u = self.rotation
        a = self.values[:, None, :]  # [C, 1, K]
        spread = (coef @ u).div_(a + 2 * self.penalty[..., :1])  # [C, D, K] in Hbar's eigenbasis
        largest = a.amax(dim=-1, keepdim=True)  # [C, 1, 1]
        inverse = torch.where(a > NULL * largest, 1 / a.clamp(min=NULL * largest), torch.zeros_like(a))  # [C, 1, K]
        return spread @ u.transpose(1, 2), ((bias @ u) * inverse) @ u.transpose(1, 2)


def softmax_curvature(slope: torch.Tensor, labels: torch.Tensor, penalty: torch.Tensor) -> SoftmaxCurvature:
    """Hbar from the slope of the mean cross-entropy in the logits, slope [C, n, K] = (p - onehot(labels)) / n, without
    forming p: with P = n S + Y, Hbar = diag(mean p) - P'P / n = diag(sum S) - n S'S - (Y'S + S'Y) (the labels'
    counts / n cancel). labels [n] class ids; penalty [C, D, K]."""
    c, n, k = slope.shape
    by_label = torch.zeros(c, k, k, dtype=slope.dtype, device=slope.device).index_add_(1, labels, slope)  # [C, K, K]
    # Y'S: row j sums the slope over the rows labelled j
    hbar = torch.bmm(slope.transpose(1, 2), slope).mul_(-n)  # [C, K, K]
    hbar -= by_label + by_label.transpose(1, 2)
    hbar.diagonal(dim1=1, dim2=2).add_(slope.sum(dim=1))  # diag(mean p) less Y'Y / n: both hold counts / n
    values, rotation = torch.linalg.eigh(hbar.double())  # [C, K], [C, K, K]: K x K, cheap; float64 for its small values
    return SoftmaxCurvature(rotation.to(slope.dtype), values.clamp(min=0).to(slope.dtype), penalty)
