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

Where the time goes, and what it costs: the conjugate gradients are nearly all of it, and the weakly regularised
columns of rare labels need the most steps. So (measured on GoEmotions' 43k x 1536 concat_last4, 28 labels x 4 C)
solved columns leave the products (the rest no longer pay for them: 1.7x), and the curvature products run on a
bfloat16 copy of the features (`rough`). Only the step's direction comes from them: the gradient, the line search and
the stop are float32, so each column still stops where its float32 gradient is within tol (an inexact Newton method
converges to the same point; Dembo, Eisenstat & Steihaug 1982). Together 4.2x faster at tol 1e-7 than float32
products at 1e-6, and 6x nearer a tol-1e-9 solve (probabilities 9e-5 from it against 6e-4). Where bfloat16 is not
native (float32 features on a CPU) and numba is installed, the curvature products of up to FUSED_COLUMNS columns run
in one pass over the features instead (probing/fused_curvature.py): GoEmotions' logistic probes 1.55x faster on an
AVX2 CPU, rows within 1e-5. Each Newton step's conjugate gradients are preconditioned by the previous step's first
PAIRS pairs (s, H s) as a limited-memory BFGS inverse (CurvaturePairs): 24-41% fewer curvature products, GoEmotions'
nine contenders 139.5 -> 108.6 s on that CPU. The line search's trial direction in the logits, x d + db, is the sum of
the curvature products' own values x s + b weighted as d sums the steps s, so the search computes no product (on
three GoEmotions contenders 4.1 -> 1.1 s; float32 rounding apart from the direct product).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bertlens.probing.fused_curvature import FUSED_COLUMNS, applies, fused_curvature_product
from bertlens.probing.products import transposed_product

NEWTON_STEPS = 30  # outer iterations: 18 at most on GoEmotions at tol 1e-7 (measured)
CG_STEPS = 50  # conjugate-gradient iterations per Newton step at most
ARMIJO = 1e-4  # sufficient decrease of the line search (Nocedal & Wright's c1)
SHRINK = 0.75  # the conjugate gradients drop their solved columns once at most this share of them is left
PAIRS = 8  # a Newton step's first conjugate-gradient pairs kept to precondition the next step's


@dataclass(frozen=True)
class LabelSetProblem:
    """x [C, n, D] and x_t [C, D, n] (the same, transposed), targets [n, M] 0/1 float32, penalty [C, D, M]; `rough`:
    the features again in a lower precision, for the curvature products alone (None: x itself)."""

    x: torch.Tensor
    x_t: torch.Tensor
    targets: torch.Tensor
    penalty: torch.Tensor
    rough: tuple[torch.Tensor, torch.Tensor] | None = None  # (x, x_t) in bfloat16, say

    def columns(self, keep: torch.Tensor) -> LabelSetProblem:
        """The same problem over the columns `keep` [M] bool (or indices): the features are shared, not copied."""
        return LabelSetProblem(self.x, self.x_t, self.targets[:, keep], self.penalty[:, :, keep], self.rough)

    def curvature_product(self, curvature: torch.Tensor, search: tuple[torch.Tensor, torch.Tensor]):
        """H v for v = (coef [C, D, M], bias [C, 1, M]): x' (curvature * (x v + b)) + 2 pen v, and the bias row; and
        the values x v + b [C, n, M] it multiplied, where they are float32's (None where `rough` computed them)."""
        if self.rough is None and search[0].shape[-1] <= FUSED_COLUMNS and applies(self.x):  # one pass over x
            # for both products (probing/fused_curvature.py)
            back, sums, values = fused_curvature_product(self.x, search[0], search[1], curvature)
            return (back + 2 * self.penalty * search[0], sums), values
        x, x_t = self.rough or (self.x, self.x_t)
        values = torch.bmm(x, search[0].to(x.dtype)).float() + search[1]  # [C, n, M]
        weighted = curvature * values  # [C, n, M]
        back = _back(x, x_t, weighted.to(x.dtype)).float()  # [C, D, M]
        product = back + 2 * self.penalty * search[0], weighted.sum(dim=1, keepdim=True)
        return product, values if self.rough is None else None

    def logits(self, coef: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """coef [C, D, M], bias [C, 1, M] -> [C, n, M] float32."""
        return torch.bmm(self.x, coef.to(self.x.dtype)).float() + bias

    def back(self, slope: torch.Tensor) -> torch.Tensor:
        """x' slope: [C, n, M] -> [C, D, M] float32."""
        return _back(self.x, self.x_t, slope.to(self.x.dtype)).float()

    def losses(self, logits: torch.Tensor, coef: torch.Tensor) -> torch.Tensor:
        """Each column's objective [C, 1, M], summed in float64 (the line search compares decreases near 1e-9)."""
        bce = torch.nn.functional.binary_cross_entropy_with_logits(
            logits.double(), self.targets.double()[None].expand_as(logits), reduction="none"
        )  # [C, n, M]
        return bce.mean(dim=1, keepdim=True) + (self.penalty * coef * coef).double().sum(dim=1, keepdim=True)


def _back(x: torch.Tensor, x_t: torch.Tensor, slope: torch.Tensor) -> torch.Tensor:
    """x' slope [C, D, M]: from x_t where it is stored (a contiguous copy), else from x as (slope' x)' (a product
    with x_t as a transposed view of x runs 5-40x slower at 2-11 columns: probing/products.py)."""
    return torch.bmm(x_t, slope) if x_t.is_contiguous() else transposed_product(x, slope)


def _column_dot(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Per-column inner product of (coef [C, D, M], bias [C, 1, M]) pairs -> [C, 1, M]."""
    return (a[0] * b[0]).sum(dim=1, keepdim=True) + a[1] * b[1]


def _narrowed(pair: tuple[torch.Tensor, torch.Tensor], keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A (coef, bias)-shaped pair cut to the columns `keep` [M] bool."""
    return pair[0][..., keep], pair[1][..., keep]


@dataclass(frozen=True)
class CurvaturePairs:
    """A Newton step's conjugate-gradient pairs (s, H s), the first PAIRS of each column's steps: s and y as
    (coef [K, C, D, M], bias [K, C, 1, M]), rho = 1 / s'y [K, C, 1, M] (0 where a column took no such step). The
    next Newton step's Hessian is near this one's, so these pairs, as a limited-memory BFGS inverse over the Jacobi
    diagonal, precondition its conjugate gradients (Morales & Nocedal 2000, automatic preconditioning by limited
    memory quasi-Newton updating): measured on GoEmotions' nine contenders, 24-41% fewer curvature products each
    (2,437 -> 1,669). Frozen as a record, its tensors filled in place by `record` while the solve that makes it runs."""

    s: tuple[torch.Tensor, torch.Tensor]
    y: tuple[torch.Tensor, torch.Tensor]
    rho: torch.Tensor

    @staticmethod
    def empty(like: tuple[torch.Tensor, torch.Tensor]) -> CurvaturePairs:
        """No pairs yet, for columns shaped as `like` (coef [C, D, M], bias [C, 1, M])."""
        zeros = lambda t: t.new_zeros(PAIRS, *t.shape)  # noqa: E731
        return CurvaturePairs((zeros(like[0]), zeros(like[1])), (zeros(like[0]), zeros(like[1])), zeros(like[1]))

    def columns(self, keep: torch.Tensor) -> CurvaturePairs:
        """The pairs of the columns `keep` [M] bool (or indices)."""
        return CurvaturePairs(_narrowed(self.s, keep), _narrowed(self.y, keep), self.rho[..., keep])

    def first(self, count: int) -> CurvaturePairs:
        """The first `count` pairs (views): the slots after a solve's last step hold nothing and would cost the
        preconditioner four products each for no change."""
        return CurvaturePairs((self.s[0][:count], self.s[1][:count]), (self.y[0][:count], self.y[1][:count]),
                              self.rho[:count])  # fmt: skip

    def record(self, step: int, where: torch.Tensor, search, product, live: torch.Tensor) -> None:
        """Keep conjugate-gradient step `step`'s pair for the columns `where` still iterating (`live` [C, 1, M])."""
        if step >= PAIRS:
            return
        curvature = _column_dot(search, product)  # [C, 1, M]: s' H s, positive for a positive definite H
        kept = live & (curvature > 0)
        for stored, value in ((self.s, search), (self.y, product)):
            stored[0][step][..., where] = value[0] * kept
            stored[1][step][..., where] = value[1] * kept
        self.rho[step][..., where] = torch.where(kept, 1 / curvature.clamp(min=1e-30), 0.0)

    def precondition(self, jacobi: tuple[torch.Tensor, torch.Tensor], residual):
        """The limited-memory BFGS inverse applied to residual (coef [C, D, M], bias [C, 1, M]) by the two-loop
        recursion (Nocedal & Wright 2006, algorithm 7.4), `jacobi` (elementwise inverses) as its initial matrix."""
        q, scales = residual, []
        for k in reversed(range(len(self.rho))):
            s, y = (self.s[0][k], self.s[1][k]), (self.y[0][k], self.y[1][k])
            scale = self.rho[k] * _column_dot(s, q)  # [C, 1, M]
            q = (q[0] - scale * y[0], q[1] - scale * y[1])
            scales.append(scale)
        z = (jacobi[0] * q[0], jacobi[1] * q[1])
        for k, scale in zip(range(len(self.rho)), reversed(scales), strict=True):
            s, y = (self.s[0][k], self.s[1][k]), (self.y[0][k], self.y[1][k])
            gap = scale - self.rho[k] * _column_dot(y, z)  # [C, 1, M]
            z = (z[0] + gap * s[0], z[1] + gap * s[1])
        return z


def _conjugate_gradient(problem: LabelSetProblem, curvature, gradient, forcing, previous: CurvaturePairs | None):
    """Solve H d = -g per column to |r| <= forcing |g|, H = x' diag(curvature) x + 2 pen (and the bias row), by
    conjugate gradients preconditioned with H's diagonal as whitening leaves it: mean(curvature) + 2 pen (the whitened
    features have unit variance, so the data term's diagonal is the mean curvature; the penalty, 1 / (C n lam), spans
    the eigenvalues' orders of magnitude and would otherwise set the iteration count), refined by the `previous`
    Newton step's pairs where there are some (CurvaturePairs).
    Columns that have met their goal leave the products (once at most SHRINK of them are left): the slowest columns
    set the number of iterations, and the products' cost falls with the columns they carry.
    curvature [C, n, M]; gradient (coef [C, D, M], bias [C, 1, M]); forcing [C, 1, M] -> d as such a pair, this
    solve's pairs for the next, and x d + db [C, n, M] (the line search's trial direction in the logits) summed from
    the products' own values x s + b as d sums the steps s (None where the products' values were not float32's)."""
    solved = (torch.zeros_like(gradient[0]), torch.zeros_like(gradient[1]))  # the answer, every column
    solved_moved = (
        None if problem.rough is not None else torch.zeros_like(curvature)
    )  # [C, n, M]: x d + db, every column (not
    # where the products read a bfloat16 copy: their values are not float32's, and the line search makes its own)
    moved = solved_moved  # the columns still iterated (the same tensor until the first narrowing)
    pairs = CurvaturePairs.empty(gradient)  # this solve's, every column
    where = torch.arange(gradient[0].shape[-1], device=gradient[0].device)  # the columns still iterated
    mean_curvature = curvature.sum(dim=1, keepdim=True)  # [C, 1, M]: curvature is already divided by n
    inverse = (1 / (mean_curvature + 2 * problem.penalty), 1 / mean_curvature.clamp(min=1e-12))  # Jacobi

    def precondition(residual):
        if previous is None:
            return inverse[0] * residual[0], inverse[1] * residual[1]
        return previous.precondition(inverse, residual)

    residual = (-gradient[0], -gradient[1])
    direction = (torch.zeros_like(gradient[0]), torch.zeros_like(gradient[1]))
    preconditioned = precondition(residual)
    search = preconditioned
    rz = _column_dot(residual, preconditioned)  # [C, 1, M]
    goal = forcing**2 * _column_dot(residual, residual)
    live = torch.ones_like(rz, dtype=torch.bool)
    taken = 0  # the conjugate-gradient steps taken
    for step in range(CG_STEPS):
        live = live & (_column_dot(residual, residual) > goal)  # [C, 1, M]
        going = live.any(dim=0)[0]  # [M]: a column any candidate still iterates
        if not going.any():
            break
        taken = step + 1
        if going.sum() <= SHRINK * len(going):
            solved[0][..., where], solved[1][..., where] = direction
            if moved is not None:
                if moved is not solved_moved:
                    solved_moved[..., where] = moved
                moved = moved[..., going]
            where, problem, curvature = where[going], problem.columns(going), curvature[..., going]
            inverse, residual, direction, search = (_narrowed(t, going) for t in (inverse, residual, direction, search))
            rz, goal, live = rz[..., going], goal[..., going], live[..., going]
            previous = None if previous is None else previous.columns(going)
        product, values = problem.curvature_product(curvature, search)
        pairs.record(step, where, search, product, live)
        alpha = torch.where(live, rz / _column_dot(search, product).clamp(min=1e-30), 0.0)  # [C, 1, M]
        direction = (direction[0] + alpha * search[0], direction[1] + alpha * search[1])
        if moved is not None:
            moved.addcmul_(values, alpha)  # [C, n, M] += alpha (x s + b)
        residual = (residual[0] - alpha * product[0], residual[1] - alpha * product[1])
        preconditioned = precondition(residual)
        rz_next = _column_dot(residual, preconditioned)
        beta = torch.where(live, rz_next / rz.clamp(min=1e-30), 0.0)
        search = (preconditioned[0] + beta * search[0], preconditioned[1] + beta * search[1])
        rz = torch.where(live, rz_next, rz)
    solved[0][..., where], solved[1][..., where] = direction
    if moved is not None and moved is not solved_moved:
        solved_moved[..., where] = moved
    return solved, pairs.first(min(taken, PAIRS)), solved_moved


def _line_search(problem: LabelSetProblem, coef, bias, logits, step, slope, before, moved=None):
    """Each column's step length [C, 1, M] by Armijo backtracking from 1, from the objective `before` [C, 1, M] at
    (coef, bias); returns the length, the new logits and the objective there (None if some column's search ran out
    of halvings: its last trial is not where it stands). `moved`: x d + db [C, n, M] where the conjugate gradients
    summed it, else computed here (the search's only product)."""
    moved = problem.logits(step[0], step[1]) if moved is None else moved  # [C, n, M]
    length = torch.ones_like(bias)
    for _ in range(30):
        trial = logits + length * moved
        after = problem.losses(trial, coef + length * step[0])
        enough = after <= before + ARMIJO * length.double() * slope.double()
        if enough.all():
            return length, trial, after
        length = torch.where(enough, length, length / 2)
    return length, logits + length * moved, None


def newton_cg(problem: LabelSetProblem, coef: torch.Tensor, bias: torch.Tensor, max_iter: int, tol: float) -> int:
    """Minimise every column's objective from (coef [C, D, M], bias [C, 1, M]), updated in place, until each
    column's gradient is at most tol (max norm). Returns the Newton iterations taken. A column every candidate has
    solved leaves the problem: it no longer moves, and the products no longer carry it."""
    n = problem.x.shape[1]
    where = torch.arange(coef.shape[-1], device=coef.device)  # the columns still solved
    logits = problem.logits(coef, bias)  # [C, n, M]
    objective = None  # [C, 1, M]: each column's objective where it stands, when the last line search ended there
    pairs = None  # the last Newton step's curvature pairs (CurvaturePairs), once there is one
    for iteration in range(max_iter):
        at = (coef[..., where], bias[..., where])
        p = torch.sigmoid(logits)  # [C, n, M]
        error = (p - problem.targets) / n  # [C, n, M]
        gradient = (problem.back(error) + 2 * problem.penalty * at[0], error.sum(dim=1, keepdim=True))
        size = torch.maximum(gradient[0].abs().amax(dim=1, keepdim=True), gradient[1].abs())  # [C, 1, M]
        active = size > tol
        going = active.any(dim=0)[0]  # [M]
        if not going.any():
            return iteration
        if not going.all():
            where, problem, logits, p, active = (
                where[going],
                problem.columns(going),
                logits[..., going],
                p[..., going],
                active[..., going],
            )
            at, gradient = _narrowed(at, going), _narrowed(gradient, going)
            objective = None if objective is None else objective[..., going]
            pairs = None if pairs is None else pairs.columns(going)
        gradient = (gradient[0] * active, gradient[1] * active)  # a candidate's solved column stays where it is
        norm = _column_dot(gradient, gradient).sqrt()
        forcing = norm.sqrt().clamp(max=0.5)  # Eisenstat-Walker: solves tighten as the gradient falls
        curvature = p * (1 - p) / n  # [C, n, M]
        step, pairs, moved = _conjugate_gradient(problem, curvature, gradient, forcing, pairs)
        if objective is None:
            objective = problem.losses(logits, at[0])
        slope = _column_dot(gradient, step)
        length, logits, objective = _line_search(problem, at[0], at[1], logits, step, slope, objective, moved)
        # the accepted trial's objective is the next search's start: the same sums of the same values (bit-equal)
        coef[..., where] = at[0] + length * step[0]
        bias[..., where] = at[1] + length * step[1]
    return max_iter
