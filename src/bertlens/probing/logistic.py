"""Many L2-regularised logistic regressions trained at once as one batched model.

Objective per candidate c and strength C (scikit-learn's, divided by n):
    (1/n) sum_i CE(x_i W + b, y_i) + ||W||^2 / (2 C n)
Binary tasks use one logit (sigmoid), like scikit-learn; multi-class tasks use softmax.
The problems are independent, so minimising their sum with L-BFGS minimises each one.
Features are standardised per candidate on the training rows.

Speed: every L-BFGS step reads all features twice, so the fit is memory-bound. By default
the products run in bfloat16 (parameters, loss and optimiser stay float32), which halves
that traffic; `compute_dtype=torch.float32` gives scikit-learn's solution to ~1e-4.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


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
        logits = self.decision(features)
        if self.outputs == 1:
            return (logits[..., 0] > 0).long()
        return logits.argmax(dim=-1)


def _loss(logits: torch.Tensor, y: torch.Tensor, outputs: int) -> torch.Tensor:
    """Mean cross-entropy per model, summed over models. logits [C, n, R*K]."""
    c, n, rk = logits.shape
    if outputs == 1:
        target = y.to(logits.dtype)[None, :, None].expand_as(logits)  # [C, n, R]
        per = torch.nn.functional.binary_cross_entropy_with_logits(logits, target, reduction="none")  # [C, n, R]
        return per.mean(dim=1).sum()
    flat = logits.view(c, n, rk // outputs, outputs).permute(0, 2, 1, 3).reshape(-1, outputs)  # [C*R*n, K]
    per = torch.nn.functional.cross_entropy(flat, y.repeat(c * (rk // outputs)), reduction="none")
    return per.view(c, rk // outputs, n).mean(dim=-1).sum()


def _minimise(x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, per_strength: torch.Tensor,
              outputs: int, max_iter: int, tol: float) -> None:
    """L-BFGS on the summed objective, updating weight and bias in place."""
    n = x.shape[1]
    penalty = (per_strength / n).repeat_interleave(outputs)[None, None, :]  # [1, 1, R*K]
    optimizer = torch.optim.LBFGS([weight, bias], lr=1, max_iter=max_iter, history_size=20,
                                  tolerance_grad=tol, tolerance_change=1e-10, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        logits = torch.bmm(x, weight.to(x.dtype)).float() + bias  # [C, n, R*K]
        loss = _loss(logits, y, outputs) + (penalty * weight.pow(2)).sum()
        loss.backward()
        return loss

    optimizer.step(closure)


def fit_logistic(
    features: torch.Tensor,
    labels: np.ndarray,
    strengths: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0),
    *,
    max_iter: int = 60,
    warm_start_rows: int = 2000,
    warm_start_iter: int = 100,
    tol: float = 1e-4,
    compute_dtype: torch.dtype = torch.bfloat16,
    seed: int = 0,
) -> LogisticFit:
    """Fit every (candidate, strength) pair. features [C, n, D] float32; labels [n] ints 0..K-1.

    Two stages cut the passes over the full data: L-BFGS first on a seeded subsample of
    `warm_start_rows` rows, then `max_iter` more steps on all rows from there. Both stages
    minimise the same objective, so the end point is the full-data optimum the solver reaches.
    """
    y = torch.as_tensor(labels, dtype=torch.long)  # [n]
    classes = int(y.max()) + 1
    outputs = 1 if classes == 2 else classes
    count, n, dim = features.shape
    mean = features.mean(dim=1, keepdim=True)  # [C, 1, D]
    scale = features.std(dim=1, keepdim=True).clamp(min=1e-6)  # [C, 1, D]
    x = ((features - mean) / scale).to(compute_dtype)  # [C, n, D]
    width = len(strengths) * outputs
    weight = torch.zeros(count, dim, width, requires_grad=True)  # [C, D, R*K]
    bias = torch.zeros(count, 1, width, requires_grad=True)  # [C, 1, R*K]
    per_strength = torch.tensor([1.0 / (2.0 * c) for c in strengths])  # [R]
    if warm_start_rows and n > 2 * warm_start_rows:
        rows = torch.from_numpy(np.sort(np.random.default_rng(seed).choice(n, warm_start_rows, replace=False)))
        sub_y = y[rows]
        if int(sub_y.max()) + 1 == classes:  # every class present, so the objective is the same shape
            _minimise(x[:, rows], sub_y, weight, bias, per_strength, outputs, warm_start_iter, tol)
    _minimise(x, y, weight, bias, per_strength, outputs, max_iter, tol)
    return LogisticFit(mean, scale, weight.detach(), bias.detach(), tuple(strengths), outputs)
