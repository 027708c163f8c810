"""Many L2-regularised logistic regressions trained at once as one batched model.

Objective per candidate c and strength C (scikit-learn's, divided by n):
    (1/n) sum_i CE(x_i W + b, y_i) + ||W||^2 / (2 C n)
Binary tasks use one logit (sigmoid), like scikit-learn; multi-class tasks use softmax; label sets (labels [n, L]
of 0/1) use one sigmoid per label, scikit-learn's one-vs-rest, each label solved to convergence on its own by
probing/newton_cg.py in the same whitened basis (one L-BFGS over the sum of L problems stopped short of each).
The candidates' problems are independent, so minimising their sum with L-BFGS minimises each one.
With many classes (PATH_MIN_CLASSES and more) the strengths of the grid are fitted one after
another along the regularisation path, each started from the previous one's solution (as
scikit-learn's LogisticRegressionCV does): the weakly regularised fits, which 50 joint steps from
zero leave far from their optimum, start near it. Measured against the joint fit
(bench/logistic_path.py): a lower objective at every C and every number of classes, dev and test
accuracy closer to scikit-learn's converged fits, and 1.2-1.8x faster at 64 and 100 classes. With
fewer classes the joint fit is kept: the path was no faster there, up to 1.5x slower. The path's fits take the
Kronecker curvature (probing/kronecker.py) as L-BFGS's first guess and stop where the decrease L-BFGS predicts is
below PATH_DECREASE_TOL x the loss twice in a row (the step caps stay as a bound): on the 100k cloze's 1536-wide fit
23 steps instead of 50 for the first strength, the second's at or near its cap of 25, each 2-3x nearer its optimum
than the plain L-BFGS's caps left it (docs/results-log.md, issue #75 fourteenth part). Features are standardised per
candidate on the training rows.

Given dev rows (`DevSearch`), the grid is searched rather than fitted whole: the path, and label
sets' strengths (the first two together, then one at a time), stop after the first strength whose
dev score falls below the best so far for every candidate; the strengths after it are left
unfitted (`LogisticFit.fitted`). The choice on dev is then the whole grid's whenever dev scores rise
to one peak and fall after it (as on every fold of the 100k cloze and every GoEmotions contender
measured), and the path's fits it keeps are computed exactly as before. There the best C is
mostly the strongest or the next one, so the weakly regularised fits, the slowest, mostly go
(docs/results-log.md, issue #75, third part).

Speed: L-BFGS runs in the eigenbasis of each candidate's feature covariance, scaled to unit
variance (PCA whitening), which turns the badly conditioned problems of anisotropic BERT features
into nearly isotropic ones: tens of steps instead of hundreds. In that basis the penalty
||W||^2 is a diagonal form (coefficient^2 / eigenvalue), so the whitened features are computed
once per fit and each step costs two products with them and nothing D x D. L-BFGS is invariant
to rotations, so this takes the steps a Cholesky whitening would, at a fraction of the cost. Its line search moves
along the logits (probing/logit_lbfgs.py): the trial steps torch.optim.LBFGS would evaluate with two products each
cost none, the same iterates (rows equal in float64; in float32 TREC's rows moved 0.028, nearer float64's than before:
docs/results-log.md, issue #75 thirteenth part).
The gradient is written out (softmax or sigmoid minus the one-hot targets), not traced by
autograd. The products run in bfloat16 where the device computes it natively (a CPU with avx512_bf16 or amx_bf16, a
GPU with bf16), float32 elsewhere (`product_dtype`; parameters, loss and optimiser stay float32 either way): on an
AMD EPYC with AVX2 only, bfloat16 products are emulated, 20x slower than float32's, and TREC's logistic probes took
6.3x the bank (docs/results-log.md, issue #75, seventh part). `compute_dtype=torch.float64` runs everything in float64
for reference checks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from bertlens.encoding.precision import native_bf16
from bertlens.probing.kronecker import softmax_curvature
from bertlens.probing.logit_lbfgs import LinearObjective
from bertlens.probing.logit_lbfgs import minimise as lbfgs_minimise
from bertlens.probing.newton_cg import LabelSetProblem, newton_cg
from bertlens.probing.products import gram
from bertlens.representation.logits import logit_loss, logit_width, predict_classes

C_GRID = (0.01, 0.1, 1.0, 10.0)  # inverse L2 strengths, as scikit-learn's C: the one grid every probe chooses from
CURVATURE_DTYPE = torch.bfloat16  # label sets: the Newton-CG's curvature products where bf16 is native (only the
# step's direction: the gradient and the line search stay float32, so the point each column stops at is float32's;
# measured on GoEmotions' 43k x 1536 concat_last4: 4.2x faster at tol 1e-7 than float32 products at 1e-6, and 6x
# nearer a tol 1e-9 solve); elsewhere float32's own products
PATH_DECREASE_TOL = 5e-5  # the path's fits stop where L-BFGS predicts less than this x the loss for its next step
# (twice in a row): on the 100k cloze's 1536-wide fit after 23 steps for the first strength (the cap is 50), the
# objective 2-3x nearer its optimum than the plain L-BFGS's caps left it (docs/results-log.md, #75 fourteenth part)
PATH_MIN_CLASSES = 48  # from here the grid is fitted along the warm-started path (measured: faster at 64 and 100
# classes, not at 32 and fewer, where each strength's products are bound by reading the features and the joint
# fit reads them once per step for the whole grid; bench/logistic_path.py)


def product_dtype(device: torch.device | str = "cpu", flags: frozenset[str] | None = None) -> torch.dtype:
    """The dtype of the probes' large products on `device`: bfloat16 where it is native there, float32 elsewhere
    (`flags`: the CPU's, read from the machine when None)."""
    return torch.bfloat16 if native_bf16(flags, device=str(device))[0] else torch.float32


def product_precision(device: torch.device | str = "cpu", flags: frozenset[str] | None = None) -> str:
    """One phrase for a report: the dtype of the probes' products on `device`, and why."""
    fast, why = native_bf16(flags, device=str(device))
    return f"products in {'bfloat16' if fast else 'float32'}: {why}"


@dataclass(frozen=True)
class LogisticFit:
    """Learned state for C candidates x R strengths (K outputs: 1 for binary)."""

    mean: torch.Tensor  # [C, 1, D]
    scale: torch.Tensor  # [C, 1, D]
    weight: torch.Tensor  # [C, D, R*K]
    bias: torch.Tensor  # [C, 1, R*K]
    strengths: tuple[float, ...]
    outputs: int
    fitted: tuple[bool, ...]  # per strength: solved (a searched grid leaves the last ones unfitted, weights zero)

    def fitted_mask(self) -> np.ndarray:
        """[R] bool: the strengths this fit solved; the others are never to be chosen."""
        return np.array(self.fitted, dtype=bool)

    def decision(self, features: torch.Tensor) -> torch.Tensor:
        """features [C, n, D] -> logits [C, R, n, K]."""
        x = (features - self.mean) / self.scale  # [C, n, D]
        logits = torch.bmm(x, self.weight) + self.bias  # [C, n, R*K]
        c, n, _ = logits.shape
        return logits.view(c, n, len(self.strengths), self.outputs).permute(0, 2, 1, 3)  # [C, R, n, K]

    def predict(self, features: torch.Tensor) -> torch.Tensor:
        """Class ids [C, R, n]."""
        return predict_classes(self.decision(features))


def _loss_and_gradient(
    logits: torch.Tensor, y: torch.Tensor, outputs: int, out: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cross-entropy per model, summed over models, and its gradient in the logits [C, n, R*K].

    d(mean CE)/d(logits) = (p - onehot(y)) / n, p the softmax (sigmoid for one output) of the logits.
    `out` (the logits' shape and dtype): where the softmax's gradient is written, instead of a new tensor.
    """
    c, n, rk = logits.shape
    if outputs == 1:
        target = y[None, :, None].expand(c, n, rk)  # [C, n, R]
        loss = logit_loss(logits[..., None], target, reduction="sum") / n
        return loss, (torch.sigmoid(logits) - target.to(logits.dtype)) / n  # [C, n, R]
    grouped = logits.view(c, n, rk // outputs, outputs)  # [C, n, R, K]
    log_p = torch.log_softmax(grouped, dim=-1, out=None if out is None else out.view_as(grouped))  # [C, n, R, K]
    picked = log_p.gather(-1, y[None, :, None, None].expand(c, n, rk // outputs, 1))  # [C, n, R, 1]
    gradient = log_p.exp_()  # p, in place
    gradient.scatter_add_(-1, y[None, :, None, None].expand_as(picked), torch.full_like(picked, -1.0))  # p - onehot
    return -picked.sum() / n, gradient.view(c, n, rk).div_(n)


def _eigen_whitening(cov: torch.Tensor, jitter: float = 1e-3) -> tuple[torch.Tensor, torch.Tensor]:
    """A covariance cov [D, D] (+ jitter I) = V diag(lam) V': the basis V lam^-1/2 [D, D] and lam [D].

    Only a change of coordinates (a preconditioner), so the covariance may be approximate; the
    jitter keeps constant features (eigenvalue 0) finite.
    """
    values, vectors = torch.linalg.eigh(cov)  # V is orthogonal to rounding in float32 too, which is all ||w|| needs
    values = values.clamp(min=0) + jitter  # [D]
    return vectors * values.rsqrt(), values


def _standardise(features: torch.Tensor, dtype: torch.dtype, params: torch.dtype, syrk: bool = False):
    """Per-candidate mean [C,1,D], scale [C,1,D], whitening basis [C,D,D], eigenvalues [C,D] and the
    whitened features [C,n,D] in `dtype`, built one candidate at a time so no second full float32 copy is held.
    syrk: the covariance through products.gram (half the arithmetic from 1,024 wide), for label sets, whose Newton
    solves end at a gradient of 1e-7 wherever the basis's rounding starts them (GoEmotions' rows equal). The softmax
    fits keep z' z: L-BFGS stops at a tolerance of 1e-4, and the syrk basis's rounding moved TREC's cls/concat_last4
    by 0.018 accuracy (docs/results-log.md, issue #75 eleventh part)."""
    count, n, dim = features.shape
    on = features.device  # every tensor of the fit lives where the features are (a GPU's when the sweep runs there)
    mean = torch.empty(count, 1, dim, device=on)
    scale = torch.empty(count, 1, dim, device=on)
    basis = torch.empty(count, dim, dim, dtype=params, device=on)
    values = torch.empty(count, dim, dtype=params, device=on)
    x = torch.empty(count, n, dim, dtype=dtype, device=on)  # [C, n, D]
    for c in range(count):
        block = features[c]  # [n, D]
        mean[c, 0] = block.mean(dim=0)
        scale[c, 0] = block.std(dim=0).clamp(min=1e-6)
        z = (block - mean[c]).div_(scale[c]).to(params)  # [n, D], one candidate at a time (divided in place: one
        # new [n, D] tensor, not two)
        basis[c], values[c] = _eigen_whitening((gram(z[None])[0] if syrk else z.T @ z) / n)
        torch.matmul(z.to(dtype), basis[c].to(dtype), out=x[c])  # [n, D] whitened: unit covariance (up to the jitter
        # and rounding), written straight into its place
    return mean, scale, basis, values, x


@dataclass(frozen=True)
class _Whitened:
    """The fixed half of a fit: whitened features x [C, n, D], the same transposed and contiguous x_t [C, D, n] (for
    the gradient's product), the targets, the whitening's eigenvalues [C, D], outputs per strength and tolerance."""

    x: torch.Tensor
    x_t: torch.Tensor
    y: torch.Tensor
    values: torch.Tensor
    outputs: int
    tol: float

    def objective(self, per_strength: torch.Tensor) -> LinearObjective:
        """The fit's objective at strengths per_strength [C, R]: mean cross-entropy + the penalty, in v.

        Exactly scikit-learn's in w (divided by n): ||w||^2 = sum v^2 / lam, since V is orthogonal."""
        n = self.x.shape[1]
        penalty = (per_strength / n).repeat_interleave(self.outputs, dim=-1)[:, None, :] / self.values[
            :, :, None
        ]  # [C, D, R*K]
        y, outputs = self.y, self.outputs
        return LinearObjective(
            self.x, self.x_t, penalty, lambda logits, out: _loss_and_gradient(logits, y, outputs, out)
        )

    def minimise(
        self, coef: torch.Tensor, bias: torch.Tensor, per_strength: torch.Tensor, max_iter: int, kronecker: bool = False
    ) -> None:
        """L-BFGS over whitened coefficients v (weights w = V lam^-1/2 v), updating coef and bias in place; its line
        search moves along the logits (probing/logit_lbfgs.py): two products an iteration, not two a trial step.
        kronecker (softmax, one strength): L-BFGS's first guess is the Kronecker curvature (probing/kronecker.py) and
        it stops where the predicted decrease is below PATH_DECREASE_TOL (or at max_iter, or at tol)."""
        objective = self.objective(per_strength)
        guess = kronecker and self.outputs > 1
        curvature = (lambda slope: softmax_curvature(slope, self.y, objective.penalty)) if guess else None
        with torch.no_grad():
            lbfgs_minimise(objective, coef, bias, max_iter, self.tol, curvature, PATH_DECREASE_TOL if guess else 0.0)

    def path_minimise(self, coef: torch.Tensor, bias: torch.Tensor, per_strength: torch.Tensor, max_iter: int) -> None:
        """minimise for one strength of the path: preconditioned by the Kronecker curvature."""
        self.minimise(coef, bias, per_strength, max_iter, kronecker=True)


Rising = Callable[[torch.Tensor, torch.Tensor], bool]
"""(one strength's whitened coef [C, D, K], bias [C, 1, K]) -> whether the path goes on after it."""


def _minimise_path(
    minimise: Callable[..., None],
    coef: torch.Tensor,
    bias: torch.Tensor,
    per_strength: torch.Tensor,
    max_iter: int,
    rising: Rising | None = None,
) -> tuple[bool, ...]:
    """The strengths one at a time, strongest penalty first, each started from the previous one's solution;
    which strengths were fitted (all, unless `rising` stopped the path after one of them).

    Warm starts along the regularisation path, as scikit-learn's LogisticRegressionCV fits its Cs
    (Friedman, Hastie & Tibshirani 2010 do the same for the lasso path): the first strength gets
    max_iter steps from zero, each later one max_iter // 2 from its neighbour's optimum.
    `minimise(coef, bias, per_strength, max_iter=...)` is a `_Whitened` problem's minimise.
    """
    outputs = coef.shape[-1] // per_strength.shape[1]
    order = sorted(range(per_strength.shape[1]), key=lambda r: -float(per_strength[0, r]))  # strongest penalty first
    fitted = [False] * per_strength.shape[1]
    start_coef, start_bias = torch.zeros_like(coef[..., :outputs]), torch.zeros_like(bias[..., :outputs])
    for step, r in enumerate(order):
        part = slice(r * outputs, (r + 1) * outputs)
        part_coef = start_coef.detach().clone().requires_grad_(True)  # [C, D, K]
        part_bias = start_bias.detach().clone().requires_grad_(True)  # [C, 1, K]
        iterations = max_iter if step == 0 else max(1, max_iter // 2)
        minimise(part_coef, part_bias, per_strength[:, r : r + 1], max_iter=iterations)
        with torch.no_grad():
            coef[..., part] = part_coef
            bias[..., part] = part_bias
        fitted[r] = True
        if rising is not None and not rising(part_coef.detach(), part_bias.detach()):
            break
        start_coef, start_bias = part_coef, part_bias
    return tuple(fitted)


@dataclass(frozen=True)
class DevSearch:
    """Dev rows that search the strength grid instead of fitting all of it: features [C, m, D] float32 and `score`,
    dev logits of one strength [C, m, K] -> [C] (higher is better: the score the caller will choose C by)."""

    features: torch.Tensor
    score: Callable[[torch.Tensor], np.ndarray]


def dev_accuracy_search(features: torch.Tensor, labels: np.ndarray) -> DevSearch:
    """The search for a classification probe: dev accuracy of class ids [m]."""
    gold = torch.as_tensor(labels, dtype=torch.long, device=features.device)  # [m]
    return DevSearch(features, lambda logits: (predict_classes(logits) == gold).double().mean(dim=-1).cpu().numpy())


def _dev_rising(dev: DevSearch, mean, scale, basis) -> Rising:
    """A path's stopping rule: go on while some candidate's dev score at the last strength is not below its best so
    far (ties go on: a later strength may still win)."""
    x = (dev.features - mean) / scale  # [C, m, D] standardised as LogisticFit.decision does
    best = np.full(x.shape[0], -np.inf)  # [C]

    def rising(coef: torch.Tensor, bias: torch.Tensor) -> bool:
        weight = torch.bmm(basis, coef.to(basis.dtype)).float()  # [C, D, K]
        score = np.asarray(dev.score(torch.bmm(x, weight) + bias.float()), dtype=np.float64)  # [C]
        going_on = bool((score >= best).any())
        np.maximum(best, score, out=best)
        return going_on

    return rising


def _search_label_sets(
    problem: LabelSetProblem, coef: torch.Tensor, bias: torch.Tensor, strengths: int, rising: Rising, max_iter, tol
) -> tuple[bool, ...]:
    """Label sets, searched, strongest penalty first: the first two strengths (a fall needs two) solved together from
    zero, then one at a time from the previous strength's solution, until `rising` says stop; which strengths were
    fitted. Solved to tol, a column ends where the joint solve of every strength ends it (within tol): only the
    strengths after the stop are saved (they were the slowest: the weakly regularised columns of rare labels).
    Measured on GoEmotions: the first two together took 50 s against 61 s one at a time (docs/results-log.md #75)."""
    outputs = coef.shape[-1] // strengths
    columns = [torch.arange(r * outputs, (r + 1) * outputs, device=coef.device) for r in range(strengths)]
    order = sorted(range(strengths), key=lambda r: -float(problem.penalty[..., columns[r]].max()))
    stages = [order[:2]] + [[r] for r in order[2:]]
    fitted = [False] * strengths
    start = None  # the previous strength's solution: coef [C, D, M], bias [C, 1, M]
    for stage in stages:
        where = torch.cat([columns[r] for r in stage])  # [M x strengths in this stage]
        if start is None:
            part = torch.zeros_like(coef[..., where]), torch.zeros_like(bias[..., where])
        else:
            part = start[0].clone(), start[1].clone()
        newton_cg(problem.columns(where), part[0], part[1], max_iter, tol)
        coef[..., where], bias[..., where] = part
        for i, r in enumerate(stage):
            fitted[r] = True
            start = part[0][..., i * outputs : (i + 1) * outputs], part[1][..., i * outputs : (i + 1) * outputs]
            if not rising(*start):
                return tuple(fitted)
    return tuple(fitted)


def fit_logistic(
    features: torch.Tensor,
    labels: np.ndarray,
    strengths: tuple[float, ...] = C_GRID,
    *,
    max_iter: int = 50,
    tol: float = 1e-4,
    compute_dtype: torch.dtype | None = None,
    candidate_strengths: np.ndarray | None = None,
    warm_path: bool | None = None,
    dev: DevSearch | None = None,
) -> LogisticFit:
    """Fit every (candidate, strength) pair. features [C, n, D] float32; labels [n] ints 0..K-1, or [n, L] 0/1 label
    sets (one sigmoid per label).

    compute_dtype: the large products' dtype (None: `product_dtype` of the features' device; float64: everything in
    float64, for reference checks). candidate_strengths [C]: instead of the grid, one C per candidate (R = 1), e.g. to refit
    each layer at the strength chosen for it elsewhere. warm_path: fit the grid along the warm-started
    path (True) or jointly from zero (False); None chooses by the number of classes (PATH_MIN_CLASSES).
    dev: search the grid on dev rows (DevSearch) instead of fitting all of it: strongest penalty first, stopped after
    the first strength whose dev score falls below the best so far for every candidate (the strengths left are
    marked unfitted in `fitted`); used by the warm path and by label sets, not by joint fits.
    """
    label_sets = np.ndim(labels) == 2
    device_dtype = product_dtype(features.device)  # bfloat16 where this device has it natively, else float32
    compute_dtype = device_dtype if compute_dtype is None else compute_dtype
    if label_sets and compute_dtype == torch.bfloat16:  # Newton's curvature products need float32's digits
        compute_dtype = torch.float32
    on = features.device
    y = torch.as_tensor(labels, dtype=torch.float32 if label_sets else torch.long, device=on)  # [n] or [n, L]
    outputs = y.shape[1] if label_sets else logit_width(int(y.max()) + 1)
    count, n, dim = features.shape
    params = (
        torch.float64 if compute_dtype == torch.float64 else torch.float32
    )  # float64: end to end, for reference checks
    mean, scale, basis, values, x = _standardise(features, compute_dtype, params, syrk=label_sets)  # x whitened
    if candidate_strengths is not None:
        strengths = (0.0,)  # one strength per candidate: the grid has a single, per-candidate column
    width = len(strengths) * outputs
    coef = torch.zeros(count, dim, width, dtype=params, device=on, requires_grad=True)  # [C, D, R*K] whitened
    bias = torch.zeros(count, 1, width, dtype=params, device=on, requires_grad=True)  # [C, 1, R*K]
    if candidate_strengths is not None:
        per_strength = torch.as_tensor(
            1.0 / (2.0 * np.asarray(candidate_strengths, dtype=np.float64)), dtype=params, device=on
        )[:, None]  # [C, 1]
    else:
        per_strength = torch.tensor([1.0 / (2.0 * c) for c in strengths], dtype=params, device=on)[None].expand(
            count, -1
        )  # [C, R]
    if warm_path is None:
        warm_path = outputs >= PATH_MIN_CLASSES
    fitted = (True,) * len(strengths)  # every strength, unless a searched grid stops early
    if label_sets:  # independent binary problems: each solved to tol by its own Newton-CG (probing/newton_cg.py)
        penalty = (per_strength / n).repeat_interleave(outputs, dim=-1)[:, None, :] / values[:, :, None]  # [C, D, M]
        targets = y.repeat(1, width // outputs).to(params)  # [n, M]
        x_t = x.transpose(1, 2)  # [C, D, n]: a view (no copy), its products taken as (y' x)' (probing/products.py);
        # the curvature products, read in every conjugate-gradient step, get the contiguous lower-precision copy where
        # it is native (a float32 one too would add 4 bytes a value)
        lower = x.dtype == torch.float32 and device_dtype == CURVATURE_DTYPE  # a cheaper copy only where it is native
        rough = (x.to(CURVATURE_DTYPE), x_t.to(CURVATURE_DTYPE).contiguous()) if lower else None
        problem = LabelSetProblem(x, x_t, targets, penalty, rough)
        with torch.no_grad():
            if dev is None or candidate_strengths is not None:
                newton_cg(problem, coef, bias, max_iter, tol)
            else:
                rising = _dev_rising(dev, mean, scale, basis)
                fitted = _search_label_sets(problem, coef, bias, len(strengths), rising, max_iter, tol)
    else:
        x_t = x.transpose(1, 2).contiguous()  # [C, D, n]: the gradient's product reads rows contiguously (1.3x)
        whitened = _Whitened(x, x_t, y, values, outputs, tol)
        if candidate_strengths is None and warm_path:  # the grid: one strength after another along the path
            rising = None if dev is None else _dev_rising(dev, mean, scale, basis)
            fitted = _minimise_path(whitened.path_minimise, coef, bias, per_strength, max_iter, rising)
        else:  # one strength per candidate, or the grid jointly: a single fit
            whitened.minimise(coef, bias, per_strength, max_iter=max_iter)
    with torch.no_grad():
        weight = torch.bmm(basis, coef).float()  # [C, D, R*K]
    return LogisticFit(mean, scale, weight, bias.detach().float(), tuple(strengths), outputs, fitted)
