"""Batched ridge regression (closed form) for the pair-similarity probe.

Minimises ||X w + b - y||^2 + alpha ||w||^2 per candidate and alpha, on standardised features.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

ALPHA_GRID = (1.0, 10.0, 100.0, 1000.0)  # L2 strengths on standardised features: the one ridge grid


@dataclass(frozen=True)
class RidgeFit:
    mean: torch.Tensor  # [C, 1, D]
    scale: torch.Tensor  # [C, 1, D]
    weight: torch.Tensor  # [C, A, D]
    bias: torch.Tensor  # [C, A]
    alphas: tuple[float, ...]

    def predict(self, features: torch.Tensor) -> torch.Tensor:
        """features [C, n, D] -> predictions [C, A, n]."""
        x = (features - self.mean) / self.scale  # [C, n, D]
        return torch.einsum("cnd,cad->can", x, self.weight) + self.bias[:, :, None]


def fit_ridge(features: torch.Tensor, targets: torch.Tensor, alphas: tuple[float, ...] = ALPHA_GRID) -> RidgeFit:
    """features [C, n, D] float; targets [n]."""
    mean = features.mean(dim=1, keepdim=True)  # [C, 1, D]
    scale = features.std(dim=1, keepdim=True).clamp(min=1e-6)  # [C, 1, D]
    x = (features - mean) / scale  # [C, n, D]
    y = (targets - targets.mean()).float()  # [n]
    gram = x.transpose(1, 2) @ x  # [C, D, D]
    rhs = (x.transpose(1, 2) @ y).unsqueeze(-1)  # [C, D, 1]
    eye = torch.eye(gram.shape[-1], dtype=gram.dtype)
    # alpha >= 1 on standardised features keeps the system well conditioned for float32 Cholesky
    weights = torch.stack(
        [torch.cholesky_solve(rhs, torch.linalg.cholesky(gram + a * eye))[..., 0] for a in alphas], dim=1
    )  # [C, A, D]
    bias = torch.full(weights.shape[:2], float(targets.double().mean()), dtype=torch.float64)  # [C, A]
    return RidgeFit(mean, scale, weights, bias.float(), tuple(alphas))
