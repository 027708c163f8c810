"""L-BFGS for batched linear models whose line search moves along the logits, not the features.

A linear model's logits are affine in its parameters: along a direction d from w, logits(w + t d) = logits(w) +
t (x d_coef + d_bias). So one product x d per iteration gives every trial step of the line search its loss and its
slope along d (the gradient's product x' slope only dots with d, which the logits give as sum(slope * x d)); the
product x' slope is taken once, at the step the search accepts. torch.optim.LBFGS with a strong Wolfe search
evaluates its closure, two products over all rows, at each trial: 1.2-1.25 trials per iteration on the 100k
cloze's softmax fits (59 evaluations in 50 iterations, 31 in 25), so 2.4 products an iteration become 2.

The iterates are torch.optim.LBFGS's (lr 1, strong Wolfe, its first step min(1, 1/|g|_1), its stopping rules and
its evaluation cap max_iter * 5 // 4, trial steps counted as evaluations) up to rounding: the logits are summed step
by step instead of recomputed from the parameters. Nocedal & Wright, *Numerical Optimization* (2006): Algorithm 7.4
(the two-loop recursion), Algorithms 3.5-3.6 (the bracketing and zoom of a strong Wolfe search), eq. 3.59 (the
cubic step); the safeguards (steps kept a tenth of the bracket away from its ends, extrapolation within 1.01 to 10
times the last step) are those of Schmidt's minFunc, which torch's follows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch

HISTORY = 20  # correction pairs kept (torch.optim.LBFGS's history_size as the probes set it)
ARMIJO, CURVATURE = 1e-4, 0.9  # strong Wolfe constants c1, c2
CHANGE_TOL = 1e-12  # no progress: a step, a bracket or a loss change below this ends the search or the solve
QUIET_ITERATIONS = 2  # decrease_tol stops a fit when this many predictions in a row are below it: one alone stopped
# some fits of tests/probing/test_logistic.py's 48-class problem farther from their optimum than the plain L-BFGS's
# step cap (C = 10: 2.0e-3 against 6.9e-4); on the 100k cloze the second costs about one step a strength

LossOf = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
"""(logits [C, n, K], out: where to write the slope) -> (summed loss, slope d loss / d logits [C, n, K])."""


class Hessian(Protocol):
    """An approximate Hessian that applies its inverse to a direction."""

    def solve(self, coef: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...


Curvature = Callable[[torch.Tensor], Hessian]
"""(slope d loss / d logits [C, n, K] at a point) -> an approximate Hessian there (probing/kronecker.py)."""


@dataclass(frozen=True)
class LinearObjective:
    """loss_of(x coef + bias) + sum(penalty * coef^2), for coef [C, D, K] and bias [C, 1, K].

    x [C, n, D] in the products' dtype and x_t [C, D, n] the same transposed (contiguous, for the gradient's
    product); penalty [C, D, K] float (the parameters' dtype)."""

    x: torch.Tensor
    x_t: torch.Tensor
    penalty: torch.Tensor
    loss_of: LossOf

    def product(self, coef: torch.Tensor, bias: torch.Tensor, into: torch.Tensor, scratch: torch.Tensor) -> None:
        """into [C, n, K] = x coef + bias, through scratch (the products' dtype) where that is lower than into's."""
        if self.x.dtype == into.dtype:
            torch.bmm(self.x, coef, out=into)
        else:
            torch.bmm(self.x, coef.to(self.x.dtype), out=scratch)
            into.copy_(scratch)
        into.add_(bias)  # converted, then added in place (a mixed-dtype broadcast add ran 10x slower)

    def penalty_of(self, coef: torch.Tensor) -> torch.Tensor:
        """sum(penalty * coef^2), summed as the line search sums it."""
        return (self.penalty * coef * coef).sum()

    def gradient(self, slope: torch.Tensor, coef: torch.Tensor, scratch: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(d/d coef [C, D, K], d/d bias [C, 1, K]) from the slope [C, n, K] at coef."""
        sent = slope if slope.dtype == self.x_t.dtype else scratch.copy_(slope)  # rounded as .to(x's dtype)
        grad_coef = torch.bmm(self.x_t, sent).to(coef.dtype).add_(self.penalty * coef, alpha=2)  # [C, D, K]
        return grad_coef, slope.sum(dim=1, keepdim=True)  # [C, 1, K]


@dataclass
class _Line:
    """The model along one direction: logits = base + t * moved, coef = coef0 + t * d_coef."""

    objective: LinearObjective
    base: torch.Tensor  # [C, n, K] logits at t = 0
    moved: torch.Tensor  # [C, n, K] x d_coef + d_bias
    coef0: torch.Tensor  # [C, D, K]
    d_coef: torch.Tensor  # [C, D, K]
    trial: torch.Tensor  # [C, n, K] the logits of the last step evaluated
    slope: torch.Tensor  # [C, n, K] their slope
    evaluated: float = float("nan")  # the step `trial` and `slope` hold

    def at(self, t: float) -> tuple[float, float]:
        """(loss, its derivative in t) at step t: no product over the rows."""
        torch.add(self.base, self.moved, alpha=t, out=self.trial)
        loss, slope = self.objective.loss_of(self.trial, self.slope)
        if slope.data_ptr() != self.slope.data_ptr():
            self.slope = slope
        self.evaluated = t
        coef = torch.add(self.coef0, self.d_coef, alpha=t)  # [C, D, K]
        weighted = self.objective.penalty * coef  # [C, D, K]
        value = loss + (weighted * coef).sum()
        derivative = (self.slope * self.moved).sum() + 2 * (weighted * self.d_coef).sum()  # = gradient . direction
        return float(value), float(derivative)


def _cubic_step(t1: float, f1: float, g1: float, t2: float, f2: float, g2: float, low: float, high: float) -> float:
    """The minimiser of the cubic through (t1, f1, slope g1) and (t2, f2, slope g2), kept in [low, high]; the
    middle of [low, high] when the cubic has none (Nocedal & Wright eq. 3.59)."""
    d1 = g1 + g2 - 3 * (f1 - f2) / (t1 - t2)
    square = d1 * d1 - g1 * g2
    if square < 0:
        return (low + high) / 2
    d2 = square**0.5
    if t1 <= t2:
        best = t2 - (t2 - t1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        best = t1 - (t1 - t2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(best, low), high)


def _wolfe_step(line: _Line, t: float, f0: float, g0: float, budget: int, d_size: float) -> tuple[float, float, int]:
    """A step satisfying the strong Wolfe conditions along the line (or the best bracketed when the budget of
    evaluations or the bracket's width runs out): (step, loss there, evaluations)."""
    f, g = line.at(t)
    evals, tries = 1, 0
    prev_t, prev_f, prev_g = 0.0, f0, g0
    bracket: list[list[float]] | None = None  # [[t, f, g] low or high, [t, f, g]]
    while tries < budget:
        if f > f0 + ARMIJO * t * g0 or (tries > 1 and f >= prev_f):
            bracket = [[prev_t, prev_f, prev_g], [t, f, g]]
            break
        if abs(g) <= -CURVATURE * g0:
            return t, f, evals
        if g >= 0:
            bracket = [[prev_t, prev_f, prev_g], [t, f, g]]
            break
        step = _cubic_step(prev_t, prev_f, prev_g, t, f, g, t + 0.01 * (t - prev_t), t * 10)
        prev_t, prev_f, prev_g = t, f, g
        t = step
        f, g = line.at(t)
        evals, tries = evals + 1, tries + 1
    if bracket is None:  # the budget ran out while extrapolating
        bracket = [[0.0, f0, g0], [t, f, g]]
    low = 0 if bracket[0][1] <= bracket[1][1] else 1
    stuck = False
    while tries < budget:
        (t_a, f_a, g_a), (t_b, f_b, g_b) = bracket
        if abs(t_b - t_a) * d_size < 1e-9:
            break
        t = _cubic_step(t_a, f_a, g_a, t_b, f_b, g_b, min(t_a, t_b), max(t_a, t_b))
        lo_end, hi_end = min(t_a, t_b), max(t_a, t_b)
        margin = 0.1 * (hi_end - lo_end)
        if min(hi_end - t, t - lo_end) < margin:  # too near an end: progress is slow
            if stuck or t >= hi_end or t <= lo_end:
                t = hi_end - margin if abs(t - hi_end) < abs(t - lo_end) else lo_end + margin
                stuck = False
            else:
                stuck = True
        else:
            stuck = False
        f, g = line.at(t)
        evals, tries = evals + 1, tries + 1
        high = 1 - low
        if f > f0 + ARMIJO * t * g0 or f >= bracket[low][1]:
            bracket[high] = [t, f, g]
            low = 0 if bracket[0][1] <= bracket[1][1] else 1
            continue
        if abs(g) <= -CURVATURE * g0:
            bracket[low] = [t, f, g]
            break
        if g * (bracket[high][0] - bracket[low][0]) >= 0:
            bracket[high] = list(bracket[low])
        bracket[low] = [t, f, g]
    return bracket[low][0], bracket[low][1], evals


@dataclass
class _Memory:
    """The kept correction pairs (s, y), 1 / y's, and the initial inverse Hessian's scale y's / y'y."""

    steps: list[torch.Tensor] = field(default_factory=list)
    changes: list[torch.Tensor] = field(default_factory=list)
    inverse_curvature: list[float] = field(default_factory=list)
    scale: float = 1.0

    def update(self, step: torch.Tensor, change: torch.Tensor) -> None:
        """Keep the pair where the curvature y's is positive (else the inverse Hessian would not be)."""
        curvature = float(change.dot(step))
        if curvature > 1e-10:
            if len(self.steps) == HISTORY:
                del self.steps[0], self.changes[0], self.inverse_curvature[0]
            self.steps.append(step)
            self.changes.append(change)
            self.inverse_curvature.append(1.0 / curvature)
            self.scale = curvature / float(change.dot(change))

    def direction(
        self, grad: torch.Tensor, initial: Callable[[torch.Tensor], torch.Tensor] | None = None
    ) -> torch.Tensor:
        """-H grad, H the inverse Hessian of the kept pairs (Nocedal & Wright Algorithm 7.4, the two-loop recursion)
        from the first guess scale x I, or from `initial` (a vector [P] -> H0 times it) scaled by y's / y'H0 y (the
        same rule: H0's size along the last change, Nocedal & Wright eq. 7.20)."""
        q = grad.neg()  # [P]
        alphas = [0.0] * len(self.steps)
        for i in range(len(self.steps) - 1, -1, -1):
            alphas[i] = float(self.steps[i].dot(q)) * self.inverse_curvature[i]
            q.add_(self.changes[i], alpha=-alphas[i])
        if initial is None:
            r = q.mul_(self.scale)
        else:
            r = initial(q)
            if self.steps:
                last = self.changes[-1]
                r.mul_(1.0 / (self.inverse_curvature[-1] * float(last.dot(initial(last)))))
        for i, step in enumerate(self.steps):
            beta = float(self.changes[i].dot(r)) * self.inverse_curvature[i]
            r.add_(step, alpha=alphas[i] - beta)
        return r


@dataclass(frozen=True)
class _Flat:
    """Every parameter in one vector [P] (coef's values, then bias's), as L-BFGS's dot products need them."""

    coef_shape: torch.Size
    bias_shape: torch.Size

    def coef(self, flat: torch.Tensor) -> torch.Tensor:
        return flat[: self.coef_shape.numel()].view(self.coef_shape)  # [C, D, K]

    def bias(self, flat: torch.Tensor) -> torch.Tensor:
        return flat[self.coef_shape.numel() :].view(self.bias_shape)  # [C, 1, K]

    def join(self, coef: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return torch.cat([coef.reshape(-1), bias.reshape(-1)])  # [P]


def _solver(guess: Hessian, flat: _Flat) -> Callable[[torch.Tensor], torch.Tensor]:
    """The approximate Hessian's inverse on flat vectors [P]."""
    return lambda v: flat.join(*guess.solve(flat.coef(v), flat.bias(v)))


def _direction(
    memory: _Memory, grad: torch.Tensor, iteration: int, initial: Callable[[torch.Tensor], torch.Tensor] | None
) -> tuple[torch.Tensor, float]:
    """The quasi-Newton direction [P] and the first step tried along it: torch's min(1, 1 / |g|_1) at the first
    iteration from a scalar guess (the direction is then -grad), 1 from a curvature `initial` (a Newton step's)."""
    if initial is not None:
        return memory.direction(grad, initial), 1.0
    return memory.direction(grad), min(1.0, 1.0 / float(grad.abs().sum())) if iteration == 1 else 1.0


def minimise(
    objective: LinearObjective,
    coef: torch.Tensor,
    bias: torch.Tensor,
    max_iter: int,
    tol: float,
    curvature: Curvature | None = None,
    decrease_tol: float = 0.0,
) -> int:
    """L-BFGS on the objective from coef [C, D, K] and bias [C, 1, K] (updated in place); the iterations taken.

    Stops as torch.optim.LBFGS(lr=1, history_size=20, tolerance_grad=tol, tolerance_change=1e-12,
    line_search_fn="strong_wolfe") does: after max_iter iterations or max_iter * 5 // 4 evaluations (trial steps
    included), at a gradient of at most tol in every coordinate, or when a step or the loss stops changing.

    curvature: (the slope at the current point) -> its approximate Hessian (`solve(coef, bias)` its inverse applied),
    L-BFGS's first guess at each iteration instead of a multiple of I (probing/kronecker.py); the first step is then 1,
    as a Newton step's. decrease_tol: also stop when the decrease the quasi-Newton model predicts for the next step,
    -g'd / 2 (g'Hg / 2, the Newton decrement's square over two: Boyd & Vandenberghe 2004, sec. 9.5.1), is at most
    decrease_tol x max(|loss|, 1) (relative, as L-BFGS-B's ftol: Byrd, Lu, Nocedal & Zhu 1995) at QUIET_ITERATIONS
    iterations in a row."""
    max_eval = max_iter * 5 // 4
    c, n, k = objective.x.shape[0], objective.x.shape[1], coef.shape[-1]
    buffers = torch.empty(4, c, n, k, dtype=coef.dtype, device=coef.device)  # [4, C, n, K] logits, x d, trial, slope
    lower = torch.empty(c, n, k, dtype=objective.x.dtype, device=coef.device)  # the products' own, when lower
    logits, moved = buffers[0], buffers[1]
    flat = _Flat(coef.shape, bias.shape)
    w = flat.join(coef.detach(), bias.detach())  # [P]
    objective.product(flat.coef(w), flat.bias(w), logits, lower)
    loss, slope = objective.loss_of(logits, buffers[3])
    value = float(loss + objective.penalty_of(flat.coef(w)))
    grad = flat.join(*objective.gradient(slope, flat.coef(w), lower))  # [P]
    evals, memory, iteration, quiet = 1, _Memory(), 0, 0
    if grad.abs().max() <= tol:
        return 0
    direction, t, prev_grad = grad, 1.0, grad
    while iteration < max_iter:
        iteration += 1
        if iteration > 1:
            memory.update(direction * t, grad - prev_grad)
        direction, t = _direction(
            memory, grad, iteration, None if curvature is None else _solver(curvature(slope), flat)
        )
        prev_grad, prev_value = grad, value
        slope_along = float(grad.dot(direction))
        if slope_along > -CHANGE_TOL:
            break
        quiet = quiet + 1 if -slope_along / 2 <= decrease_tol * max(abs(value), 1.0) else 0  # predicted decrease
        if quiet == QUIET_ITERATIONS:
            break
        objective.product(flat.coef(direction), flat.bias(direction), moved, lower)  # [C, n, K]: x d, the one
        # forward product of the iteration
        line = _Line(objective, logits, moved, flat.coef(w).clone(), flat.coef(direction), buffers[2], buffers[3])
        t, value, used = _wolfe_step(line, t, value, slope_along, max_eval - evals, float(direction.abs().max()))
        evals += used
        w.add_(direction, alpha=t)
        logits.add_(moved, alpha=t)  # [C, n, K]: the accepted step's logits, as the trial computed them
        if iteration == max_iter or evals >= max_eval:
            break  # the gradient there is not needed: one product saved
        if line.evaluated != t:  # the search ended on an earlier trial: its slope again (no product)
            line.at(t)
        slope = line.slope  # [C, n, K] at the accepted step
        grad = flat.join(*objective.gradient(slope, flat.coef(w), lower))  # [P]: the iteration's other product
        if grad.abs().max() <= tol:
            break
        if float((direction * t).abs().max()) <= CHANGE_TOL or abs(value - prev_value) < CHANGE_TOL:
            break
    coef.copy_(flat.coef(w))
    bias.copy_(flat.bias(w))
    return iteration


def torch_lbfgs(objective: LinearObjective, coef: torch.Tensor, bias: torch.Tensor, max_iter: int, tol: float):
    """The reference minimise follows: torch.optim.LBFGS on the same objective, each evaluation (trial steps
    included) computing the logits from the parameters (two products over the rows); (iterations, evaluations).
    coef and bias are updated in place. For tests and bench/logit_lbfgs.py."""
    coef, bias = coef.detach().requires_grad_(True), bias.detach().requires_grad_(True)
    optimizer = torch.optim.LBFGS(
        [coef, bias],
        lr=1,
        max_iter=max_iter,
        history_size=HISTORY,
        tolerance_grad=tol,
        tolerance_change=CHANGE_TOL,
        line_search_fn="strong_wolfe",
    )
    c, n, k = objective.x.shape[0], objective.x.shape[1], coef.shape[-1]
    logits = torch.empty(c, n, k, dtype=coef.dtype, device=coef.device)  # [C, n, K]
    lower = torch.empty(c, n, k, dtype=objective.x.dtype, device=coef.device)

    def closure() -> torch.Tensor:
        objective.product(coef.detach(), bias.detach(), logits, lower)
        loss, slope = objective.loss_of(logits, None)
        coef.grad, bias.grad = objective.gradient(slope, coef.detach(), lower)
        return loss + objective.penalty_of(coef.detach())

    optimizer.step(closure)
    state = optimizer.state[optimizer._params[0]]
    return state["n_iter"], state["func_evals"]
