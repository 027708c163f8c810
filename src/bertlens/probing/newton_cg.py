"""Many independent L2-regularised binary logistic regressions solved to convergence by truncated Newton.

Used for label sets: one sigmoid per (candidate, strength, label) column, each its own problem
    f(w, b) = (1/n) sum_i BCE(x_i w + b, y_i) + sum_d pen_d w_d^2
(scikit-learn's one-vs-rest objective, divided by n, in the whitened basis of probing/logistic.py where pen_d is
1 / (2 C n lam_d)). Summed into one L-BFGS run these problems share a line search and a history, and stop far from
each column's optimum (probabilities 1e-3 away from scikit-learn's, enough to flip a label's dev threshold).
Here every column gets its own conjugate-gradient solve, step length and stop, batched into the same wide
products: the Newton-CG method (Nocedal & Wright 2006, ch. 7.1; Lin, Weng & Keerthi 2008 for logistic regression),
with the Eisenstat-Walker forcing term min(0.5, sqrt(||g||)) and an Armijo backtracking line search per column.
A Hessian-vector product costs what a gradient does: x v, then x' (p (1 - p) / n * x v).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

NEWTON_STEPS = 30  # outer iterations; quadratic convergence: 6-12 were used on GoEmotions (measured)
CG_STEPS = 50  # conjugate-gradient iterations per Newton step at most
ARMIJO = 1e-4  # sufficient decrease of the line search (Nocedal & Wright's c1)


@dataclass(frozen=True)
class LabelSetProblem:
    """x [C, n, D] and x_t [C, D, n] (the same, transposed), targets [n, M] 0/1 float32, penalty [C, D, M]."""

    x: torch.Tensor
    x_t: torch.Tensor
    targets: torch.Tensor
    penalty: torch.Tensor

    def logits(self, coef: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """coef [C, D, M], bias [C, 1, M] -> [C, n, M] float32."""
        return torch.bmm(self.x, coef.to(self.x.dtype)).float() + bias

    def back(self, slope: torch.Tensor) -> torch.Tensor:
        """x' slope: [C, n, M] -> [C, D, M] float32."""
        return torch.bmm(self.x_t, slope.to(self.x.dtype)).float()

    def losses(self, logits: torch.Tensor, coef: torch.Tensor) -> torch.Tensor:
        """Each column's objective [C, 1, M], summed in float64 (the line search compares decreases near 1e-9)."""
        bce = torch.nn.functional.binary_cross_entropy_with_logits(
            logits.double(), self.targets.double()[None].expand_as(logits), reduction="none"
        )  # [C, n, M]
        return bce.mean(dim=1, keepdim=True) + (self.penalty * coef * coef).double().sum(dim=1, keepdim=True)


def _column_dot(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Per-column inner product of (coef [C, D, M], bias [C, 1, M]) pairs -> [C, 1, M]."""
    return (a[0] * b[0]).sum(dim=1, keepdim=True) + a[1] * b[1]


def _conjugate_gradient(problem: LabelSetProblem, curvature, gradient, forcing):
    """Solve H d = -g per column to |r| <= forcing |g|, H = x' diag(curvature) x + 2 pen (and the bias row), by
    conjugate gradients preconditioned with H's diagonal as whitening leaves it: mean(curvature) + 2 pen (the whitened
    features have unit variance, so the data term's diagonal is the mean curvature; the penalty, 1 / (C n lam), spans
    the eigenvalues' orders of magnitude and would otherwise set the iteration count).
    curvature [C, n, M]; gradient (coef [C, D, M], bias [C, 1, M]); forcing [C, 1, M] -> d as such a pair."""
    mean_curvature = curvature.sum(dim=1, keepdim=True)  # [C, 1, M]: curvature is already divided by n
    inverse = (1 / (mean_curvature + 2 * problem.penalty), 1 / mean_curvature.clamp(min=1e-12))  # Jacobi
    residual = (-gradient[0], -gradient[1])
    direction = (torch.zeros_like(gradient[0]), torch.zeros_like(gradient[1]))
    preconditioned = (inverse[0] * residual[0], inverse[1] * residual[1])
    search = preconditioned
    rz = _column_dot(residual, preconditioned)  # [C, 1, M]
    goal = forcing**2 * _column_dot(residual, residual)
    live = torch.ones_like(rz, dtype=torch.bool)
    for _ in range(CG_STEPS):
        live = live & (_column_dot(residual, residual) > goal)  # [C, 1, M]
        if not live.any():
            break
        weighted = curvature * problem.logits(search[0], search[1])  # [C, n, M]
        product = (problem.back(weighted) + 2 * problem.penalty * search[0], weighted.sum(dim=1, keepdim=True))
        alpha = torch.where(live, rz / _column_dot(search, product).clamp(min=1e-30), 0.0)  # [C, 1, M]
        direction = (direction[0] + alpha * search[0], direction[1] + alpha * search[1])
        residual = (residual[0] - alpha * product[0], residual[1] - alpha * product[1])
        preconditioned = (inverse[0] * residual[0], inverse[1] * residual[1])
        rz_next = _column_dot(residual, preconditioned)
        beta = torch.where(live, rz_next / rz.clamp(min=1e-30), 0.0)
        search = (preconditioned[0] + beta * search[0], preconditioned[1] + beta * search[1])
        rz = torch.where(live, rz_next, rz)
    return direction


def _line_search(problem: LabelSetProblem, coef, bias, logits, step, slope) -> tuple[torch.Tensor, torch.Tensor]:
    """Each column's step length [C, 1, M] by Armijo backtracking from 1; returns it and the new logits."""
    moved = problem.logits(step[0], step[1])  # [C, n, M]: x d + db, the only product of the search
    before = problem.losses(logits, coef)
    length = torch.ones_like(bias)
    for _ in range(30):
        trial = logits + length * moved
        after = problem.losses(trial, coef + length * step[0])
        enough = after <= before + ARMIJO * length.double() * slope.double()
        if enough.all():
            break
        length = torch.where(enough, length, length / 2)
    return length, logits + length * moved


def newton_cg(problem: LabelSetProblem, coef: torch.Tensor, bias: torch.Tensor, max_iter: int, tol: float) -> int:
    """Minimise every column's objective from (coef [C, D, M], bias [C, 1, M]), updated in place, until each
    column's gradient is at most tol (max norm). Returns the Newton iterations taken."""
    n = problem.x.shape[1]
    logits = problem.logits(coef, bias)  # [C, n, M]
    for iteration in range(max_iter):
        p = torch.sigmoid(logits)  # [C, n, M]
        error = (p - problem.targets) / n  # [C, n, M]
        gradient = (problem.back(error) + 2 * problem.penalty * coef, error.sum(dim=1, keepdim=True))
        size = torch.maximum(gradient[0].abs().amax(dim=1, keepdim=True), gradient[1].abs())  # [C, 1, M]
        active = size > tol
        if not active.any():
            return iteration
        gradient = (gradient[0] * active, gradient[1] * active)  # converged columns stay where they are
        norm = _column_dot(gradient, gradient).sqrt()
        step = _conjugate_gradient(problem, p * (1 - p) / n, gradient, norm.sqrt().clamp(max=0.5))
        length, logits = _line_search(problem, coef, bias, logits, step, _column_dot(gradient, step))
        coef += length * step[0]
        bias += length * step[1]
    return max_iter
