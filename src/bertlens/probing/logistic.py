"""Many L2-regularised logistic regressions trained at once as one batched model.

Objective per candidate c and strength C (scikit-learn's, divided by n):
    (1/n) sum_i CE(x_i W + b, y_i) + ||W||^2 / (2 C n)
Binary tasks use one logit (sigmoid), like scikit-learn; multi-class tasks use softmax.
The problems are independent, so minimising their sum with L-BFGS minimises each one.
Features are standardised per candidate on the training rows.

Speed: L-BFGS runs over whitened coefficients (Cholesky of each candidate's feature
covariance), which turns the badly conditioned problems of anisotropic BERT features into
nearly isotropic ones: tens of steps instead of hundreds. Every step reads all features
twice, so the products run in bfloat16 by default (parameters, loss and optimiser stay
float32); `compute_dtype=torch.float64` runs everything in float64 for reference checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bertlens.representation.logits import logit_loss, logit_width, predict_classes

C_GRID = (0.01, 0.1, 1.0, 10.0)  # inverse L2 strengths, as scikit-learn's C: the one grid every probe chooses from


@dataclass(frozen=True)
class LogisticFit:
    """Learned state for C candidates x R strengths (K outputs: 1 for binary)."""

    mean: torch.Tensor  # [C, 1, D]
    scale: torch.Tensor  # [C, 1, D]
    weight: torch.Tensor  # [C, D, R*K]
    bias: torch.Tensor  # [C, 1, R*K]
    strengths: tuple[float, ...]
    outputs: int

    def decision(self, features: torch.Tensor) -> torch.Tensor:
        """features [C, n, D] -> logits [C, R, n, K]."""
        x = (features - self.mean) / self.scale  # [C, n, D]
        logits = torch.bmm(x, self.weight) + self.bias  # [C, n, R*K]
        c, n, _ = logits.shape
        return logits.view(c, n, len(self.strengths), self.outputs).permute(0, 2, 1, 3)  # [C, R, n, K]

    def predict(self, features: torch.Tensor) -> torch.Tensor:
        """Class ids [C, R, n]."""
        return predict_classes(self.decision(features))


def _loss(logits: torch.Tensor, y: torch.Tensor, outputs: int) -> torch.Tensor:
    """Mean cross-entropy per model, summed over models. logits [C, n, R*K]."""
    c, n, rk = logits.shape
    r = rk // outputs
    if outputs == 1:
        per = logit_loss(logits[..., None], y[None, :, None].expand(c, n, r), reduction="none")  # [C, n, R]
        return per.mean(dim=1).sum()
    flat = logits.view(c, n, r, outputs).permute(0, 2, 1, 3).reshape(-1, outputs)  # [C*R*n, K]
    return logit_loss(flat, y.repeat(c * r), reduction="none").view(c, r, n).mean(dim=-1).sum()


def _whitener(cov: torch.Tensor, jitter: float = 1e-3) -> torch.Tensor:
    """Lower Cholesky factor L of each candidate's feature covariance cov [C, D, D] (+ jitter I): [C, D, D].

    Only a change of coordinates (a preconditioner), so the covariance may be approximate.
    """
    eye = torch.eye(cov.shape[-1])
    while True:
        factor, info = torch.linalg.cholesky_ex(cov + jitter * eye)
        if not bool(info.any()):
            return factor
        jitter *= 10  # numerically singular covariance (e.g. constant features): regularise more


def _standardise(features: torch.Tensor, dtype: torch.dtype):
    """Per-candidate mean [C,1,D], scale [C,1,D], covariance [C,D,D] and the standardised features
    in `dtype`, built one candidate at a time so no full float32 copy is ever held."""
    count, n, dim = features.shape
    mean = torch.empty(count, 1, dim)
    scale = torch.empty(count, 1, dim)
    cov = torch.empty(count, dim, dim)
    x = torch.empty(count, n, dim, dtype=dtype)  # [C, n, D]
    for c in range(count):
        block = features[c]  # [n, D]
        mean[c, 0] = block.mean(dim=0)
        scale[c, 0] = block.std(dim=0).clamp(min=1e-6)
        z = (block - mean[c]) / scale[c]  # [n, D] float32, one candidate at a time
        cov[c] = z.T @ z / n
        x[c] = z.to(dtype)
    return mean, scale, cov, x


def _minimise(
    x: torch.Tensor,
    y: torch.Tensor,
    unwhiten: torch.Tensor,
    coef: torch.Tensor,
    bias: torch.Tensor,
    per_strength: torch.Tensor,
    outputs: int,
    max_iter: int,
    tol: float,
) -> None:
    """L-BFGS over whitened coefficients v (weights w = L^-T v), updating coef and bias in place.

    The objective is exactly scikit-learn's in w; only the coordinates change, which removes
    the feature correlations that make the plain problem ill-conditioned (and L-BFGS slow).
    """
    n = x.shape[1]
    penalty = (per_strength / n).repeat_interleave(outputs, dim=-1)[:, None, :]  # [C, 1, R*K]
    optimizer = torch.optim.LBFGS(
        [coef, bias],
        lr=1,
        max_iter=max_iter,
        history_size=20,
        tolerance_grad=tol,
        tolerance_change=1e-12,
        line_search_fn="strong_wolfe",
    )

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        weight = torch.bmm(unwhiten, coef)  # [C, D, R*K]
        logits = torch.bmm(x, weight.to(x.dtype)).to(bias.dtype) + bias  # [C, n, R*K]
        loss = _loss(logits, y, outputs) + (penalty * weight.pow(2)).sum()
        loss.backward()
        return loss

    optimizer.step(closure)


def fit_logistic(
    features: torch.Tensor,
    labels: np.ndarray,
    strengths: tuple[float, ...] = C_GRID,
    *,
    max_iter: int = 50,
    tol: float = 1e-4,
    compute_dtype: torch.dtype = torch.bfloat16,
    candidate_strengths: np.ndarray | None = None,
) -> LogisticFit:
    """Fit every (candidate, strength) pair. features [C, n, D] float32; labels [n] ints 0..K-1.

    candidate_strengths [C]: instead of the grid, one C per candidate (R = 1), e.g. to refit
    each layer at the strength chosen for it elsewhere.
    """
    y = torch.as_tensor(labels, dtype=torch.long)  # [n]
    outputs = logit_width(int(y.max()) + 1)
    count, n, dim = features.shape
    mean, scale, cov, x = _standardise(features, compute_dtype)  # x [C, n, D] in compute_dtype
    factor = _whitener(cov)  # [C, D, D]
    unwhiten = torch.linalg.solve_triangular(
        factor.transpose(1, 2), torch.eye(dim).expand_as(factor), upper=True
    )  # L^-T
    params = (
        torch.float64 if compute_dtype == torch.float64 else torch.float32
    )  # float64: end to end, for reference checks
    unwhiten = unwhiten.to(params)
    if candidate_strengths is not None:
        strengths = (0.0,)  # one strength per candidate: the grid has a single, per-candidate column
    width = len(strengths) * outputs
    coef = torch.zeros(count, dim, width, dtype=params, requires_grad=True)  # [C, D, R*K] whitened coefficients
    bias = torch.zeros(count, 1, width, dtype=params, requires_grad=True)  # [C, 1, R*K]
    if candidate_strengths is not None:
        per_strength = torch.as_tensor(1.0 / (2.0 * np.asarray(candidate_strengths, dtype=np.float64)), dtype=params)[
            :, None
        ]  # [C, 1]
    else:
        per_strength = torch.tensor([1.0 / (2.0 * c) for c in strengths], dtype=params)[None].expand(
            count, -1
        )  # [C, R]
    _minimise(x, y, unwhiten, coef, bias, per_strength, outputs, max_iter, tol)
    with torch.no_grad():
        weight = torch.bmm(unwhiten, coef).float()  # [C, D, R*K]
    return LogisticFit(mean, scale, weight, bias.detach().float(), tuple(strengths), outputs)
