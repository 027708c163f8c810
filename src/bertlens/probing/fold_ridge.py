"""Ridge regression for every fold of a cross-validation from one pass over the rows.

A ridge fit on standardised features needs only the training rows' sufficient statistics:
the Gram matrix X'X, the feature sums, X'Y and the target sums (Hastie, Tibshirani & Friedman,
*Elements of Statistical Learning*, 2nd ed., sec. 3.4.1). Under k-fold cross-validation a fold's
training rows are every row but its test and dev rows, so their statistics are the whole table's
minus those of its test and dev rows: with every test set's sums kept, about 2 passes over the rows
for all ten folds instead of eight,
and one solve per strength (Cholesky) on a D x D system whatever the number of rows.

Where a fold has fewer training rows than features (a few hundred texts, a concatenation of layers), the same
weights come from the dual (kernel) form, W = Z'(ZZ' + alpha I)^-1 Y (the push-through identity; Saunders,
Gammerman & Vovk 1998): an n x n system instead of a D x D one, and no Gram matrix at all.

Targets are either class ids (a one-hot regression: a ridge classifier, used to screen the
sweep's candidates before logistic probes) or real values (the similarity pair probe). Features
are standardised per fold on its training rows with the unbiased standard deviation, exactly as
the batched logistic and ridge probes do, so the fits are the ones those probes would make.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from bertlens.metrics.bootstrap import spearman
from bertlens.probing.products import gram, transposed_product
from bertlens.tasks.splits import Fold

ALPHA_GRID = (1.0, 10.0, 100.0, 1000.0)  # L2 strengths on standardised features: the pair-similarity probe's grid
REGRESSION_ALPHAS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)  # strengths x training rows for a number per text (relative)
SCALE_FLOOR = 1e-6  # smallest standard deviation a feature is divided by (as the other probes)


@dataclass(frozen=True)
class FoldOutputs:
    """One fold's ridge outputs: dev [C, A, n_dev, K] at every strength, test [C, n_test, K] at the chosen one."""

    dev: torch.Tensor
    test: torch.Tensor
    chosen: np.ndarray  # [C] index of each candidate's strength


@dataclass(frozen=True)
class _Sums:
    """Sufficient statistics of some rows, per candidate (float32: the rows are centred first)."""

    gram: torch.Tensor  # [C, D, D]
    total: torch.Tensor  # [C, D]: sum of features
    cross: torch.Tensor  # [C, D, K]: sum of feature x target (per class for class ids)
    target_total: torch.Tensor  # [K]
    rows: int

    def __add__(self, other: _Sums) -> _Sums:
        return _Sums(
            self.gram + other.gram,
            self.total + other.total,
            self.cross + other.cross,
            self.target_total + other.target_total,
            self.rows + other.rows,
        )

    def __sub__(self, other: _Sums) -> _Sums:
        return self + _Sums(-other.gram, -other.total, -other.cross, -other.target_total, -other.rows)


def _targets_matrix(targets: np.ndarray, classes: int | None, device: torch.device) -> torch.Tensor:
    """[N, K] float32 on `device`: one-hot for class ids (classes given), one column for real values, a label set's
    columns."""
    if np.ndim(targets) == 2:  # label sets [N, L]: one 0/1 column per label, solved together
        return torch.as_tensor(np.asarray(targets, dtype=np.float32), device=device)
    if classes is None:
        return torch.as_tensor(np.asarray(targets, dtype=np.float32), device=device)[:, None]
    onehot = torch.zeros(len(targets), classes, device=device)
    onehot[torch.arange(len(targets), device=device), torch.as_tensor(targets, dtype=torch.long, device=device)] = 1.0
    return onehot


def _rows(t: torch.Tensor, rows: np.ndarray, dim: int) -> torch.Tensor:
    """t's entries `rows` along `dim`: a view where the rows are consecutive (a split read in order, as fixed train,
    dev and test files are: GoEmotions' 43k training rows, 51 candidates, 3 s of copies less in the screen), else a
    gathered copy. The same values either way."""
    rows = np.asarray(rows)
    if len(rows) and int(rows[-1]) - int(rows[0]) == len(rows) - 1 and bool((np.diff(rows) == 1).all()):
        return t.narrow(dim, int(rows[0]), len(rows))
    return t.index_select(dim, torch.as_tensor(rows, device=t.device))


def _sums(x: torch.Tensor, y: torch.Tensor, rows: np.ndarray, labels: torch.Tensor | None = None) -> _Sums:
    """Sufficient statistics of the given rows. x [C, N, D], y [N, K]; `labels` [N]: y is their one-hot."""
    return _sums_of(_rows(x, rows, 1), _rows(y, rows, 0), None if labels is None else _rows(labels, rows, 0))


def _sums_of(xs: torch.Tensor, ys: torch.Tensor, labels: torch.Tensor | None) -> _Sums:
    """Sufficient statistics of rows xs [C, n, D] with targets ys [n, K]; `labels` [n]: ys is their one-hot, so X'Y
    is each class's sum of rows, added up by class (n x D additions, not a product with K times as many: 4.7x
    faster at 10k rows x 384 x 100 classes, Intel Xeon, #75)."""
    if labels is None:
        cross = transposed_product(xs, ys)  # [C, D, K]
    else:
        by_class = xs.new_zeros(xs.shape[0], ys.shape[1], xs.shape[2])  # [C, K, D]
        cross = by_class.index_add_(1, labels, xs).transpose(1, 2)  # [C, D, K]
    return _Sums(
        gram(xs),  # [C, D, D]
        xs.sum(dim=1),  # [C, D]
        cross,
        ys.sum(dim=0),  # [K]
        xs.shape[1],
    )


def _solve_one(cov: torch.Tensor, alpha: float, rhs: torch.Tensor, float64: bool = False) -> torch.Tensor:
    """(cov + alpha I) W = rhs for symmetric positive definite systems (cov [C, D, D] float32, rhs [C, D, K]);
    float64, returned as float32 (as float64 with `float64`). The system is factored in place: one float64
    [C, D, D] copy, not two.

    A system that rounding made indefinite gets jitter until it factors, alone. Before, one such system sent its
    whole batch to a jitter grown until the worst system factored: every candidate of the batch was regularised by
    it, so a candidate's figure depended on which others shared its batch, i.e. on the memory budget (up to 1.2
    points of ridge-screen accuracy on all-mpnet-base-v2's [CLS] layers, 3,000 texts, 100 classes). Float64
    throughout, so far fewer systems need any.
    """
    factor = _shifted(cov, alpha)  # [C, D, D] float64, factored over itself below
    info = torch.empty(factor.shape[0], dtype=torch.int32, device=factor.device)
    torch.linalg.cholesky_ex(factor, out=(factor, info))
    for i in torch.nonzero(info).flatten().tolist():
        system = _shifted(cov[i : i + 1], alpha)[0]  # [D, D]: the in-place factoring overwrote it
        eye = torch.eye(system.shape[-1], dtype=system.dtype, device=system.device)
        jitter = 1e-9 * system.diagonal().abs().mean().clamp(min=1e-12)
        while True:
            factor_i, info_i = torch.linalg.cholesky_ex(system + jitter * eye)
            if not bool(info_i):
                factor[i] = factor_i
                break
            jitter *= 10
    solved = _cholesky_solve(rhs.double(), factor)  # [C, D, K] float64
    return solved if float64 else solved.float()


def _cholesky_solve(rhs: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """factor factor' W = rhs (factor [C, D, D] lower, rhs [C, D, K]) by its two triangular solves: LAPACK's potrs
    is the same two solves, equal to the bit here, yet PyTorch's batched cholesky_solve ran 2x slower than them on
    the CPU (4 x 1536 x 1536 systems with 100 columns: 72 against 37 ms, Intel Xeon, docs/results-log.md #75)."""
    half = torch.linalg.solve_triangular(factor, rhs, upper=False)  # [C, D, K]
    return torch.linalg.solve_triangular(factor.mT, half, upper=True)  # [C, D, K]


def _solve(sums: _Sums, alphas: tuple[float, ...]):
    """Standardise from the sums and solve every strength: mean [C, D], scale [C, D], weights [C, A, D, K], offset [K]."""
    n = sums.rows
    mean = sums.total / n  # [C, D]
    variance = (sums.gram.diagonal(dim1=1, dim2=2) - n * mean * mean) / max(n - 1, 1)  # unbiased, as torch.std
    scale = variance.clamp(min=0).sqrt().clamp(min=SCALE_FLOOR)  # [C, D]
    cov = _standardised_in_place(sums.gram, n, mean, scale)  # [C, D, D] of standardised rows (the gram's memory)
    rhs = (sums.cross - mean[:, :, None] * sums.target_total) / scale[:, :, None]  # [C, D, K]
    weights = torch.stack([_solve_one(cov, a, rhs) for a in alphas], dim=1)  # [C, A, D, K]
    return mean.float(), scale.float(), weights.float(), (sums.target_total / n).float()


COV_BLOCK = 256  # rows of the D x D covariance standardised at a time: temporaries [C, 256, D], not [C, D, D]


def _dual_pays(train_rows: int, width: int) -> bool:
    """The kernel form's system is train_rows square, the primal's width square: the smaller one is solved (its
    factoring grows with the cube of the side, the kernel's own product with train_rows^2 x width)."""
    return train_rows < width


def _solve_dual(xs: torch.Tensor, ys: torch.Tensor, alphas: tuple[float, ...]):
    """_solve's outputs from the training rows themselves, xs [C, n, D] and ys [n, K], through the dual form
    W = Z'(ZZ' + alpha I)^-1 (Y - mean Y) with Z the standardised rows (centred, so Z'Y is _solve's rhs): the same
    weights in exact arithmetic, float64 throughout as _solve_one's systems."""
    n = xs.shape[1]
    mean = xs.mean(dim=1)  # [C, D]
    variance = xs.var(dim=1) if n > 1 else torch.zeros_like(mean)  # unbiased, as _solve (one row: no spread)
    scale = variance.sqrt().clamp(min=SCALE_FLOOR)  # [C, D]
    z = xs.double().sub_(mean[:, None]).div_(scale[:, None])  # [C, n, D]: one float64 copy
    kernel = torch.bmm(z, z.mT)  # [C, n, n]
    offset = ys.double().mean(dim=0)  # [K]
    centred = (ys.double() - offset).expand(xs.shape[0], -1, -1)  # [C, n, K]
    weights = torch.stack([transposed_product(z, _solve_one(kernel, a, centred, float64=True)) for a in alphas], dim=1)
    return mean, scale, weights.float(), offset.float()  # weights [C, A, D, K]


def _standardised_in_place(gram: torch.Tensor, n: int, mean: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """(gram - n mean mean^T) / (scale scale^T), written over `gram` a block of rows at a time: the same float
    operations, element by element, as the whole-matrix expression, without its three [C, D, D] temporaries (at a
    pair width of 6,144, a concatenation's, each is 151 MB a candidate)."""
    for start in range(0, gram.shape[1], COV_BLOCK):
        rows = slice(start, start + COV_BLOCK)
        centred = gram[:, rows] - n * mean[:, rows, None] * mean[:, None, :]  # [C, b, D]
        gram[:, rows] = centred / (scale[:, rows, None] * scale[:, None, :])
    return gram


def _shifted(cov: torch.Tensor, alpha: float) -> torch.Tensor:
    """cov + alpha I as float64, equal to (cov + alpha * eye).double(): the diagonal shifted in float32, as that
    sum rounds, and nothing else copied but the one float64 system."""
    diagonal = cov.diagonal(dim1=1, dim2=2) + alpha  # [C, D] float32
    system = cov.to(torch.float64, copy=True)  # [C, D, D], a copy even of a float64 cov (it is factored in place)
    system.diagonal(dim1=1, dim2=2).copy_(diagonal)
    return system


def _outputs(xs: torch.Tensor, mean, scale, weights, offset) -> torch.Tensor:
    """Predictions [C, A, n, K] for rows xs [C, n, D] (weights [C, A, D, K] on standardised features).

    ((x - mean) / scale) W = x (W / scale) - (mean / scale) W: the standardisation moves into the
    weights, so the rows are read once and never copied standardised.
    """
    c, a, d, k = weights.shape
    flat = (weights / scale[:, None, :, None]).permute(0, 2, 1, 3).reshape(c, d, a * k)  # [C, D, A*K]
    shift = offset.reshape(-1).repeat(a) - torch.bmm(mean[:, None], flat)  # [C, 1, A*K]
    raw = torch.baddbmm(shift, xs, flat)  # [C, n, A*K]
    return raw.view(c, -1, a, k).permute(0, 2, 1, 3)  # [C, A, n, K]


Chooser = Callable[[torch.Tensor, np.ndarray], np.ndarray]  # (dev outputs [C, A, n, K], dev rows) -> index [C]


def spearman_choice(dev: torch.Tensor, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dev outputs [C, A, n, 1] of a real-valued target, gold [n] -> (each candidate's strength of best dev Spearman
    [C], that Spearman [C]); an undefined Spearman (constant outputs) never wins."""
    rho = spearman(dev[..., 0].cpu().numpy(), gold[None, None])  # [C, A]
    chosen = np.nanargmax(np.nan_to_num(rho, nan=-2), axis=1)
    return chosen, rho[np.arange(len(chosen)), chosen]


def ridge_over_folds(
    features: torch.Tensor,
    targets: np.ndarray,
    folds: list[Fold],
    alphas: tuple[float, ...],
    choose: Chooser,
    classes: int | None = None,
    relative: bool = False,
) -> Iterator[FoldOutputs]:
    """Fit on each fold's training rows at every strength, choose one per candidate on dev, yield the outputs.

    features [C, N, D] float32 (C candidates of one width; centred in place, so pass a tensor you
    own), rows indexed by the folds; targets [N] class ids (with `classes`) or values. `choose`
    picks each candidate's strength from its dev outputs; test outputs are computed for that one
    only. `relative`: strengths are multiplied by the fold's training rows (a grid that means the
    same at 1k and 100k rows). Centring on the mean of all rows is a change of coordinates only;
    it keeps the float32 sums well conditioned for the subtraction.
    """
    x = features.sub_(features.mean(dim=1, keepdim=True))  # [C, N, D]
    y = _targets_matrix(targets, classes, x.device)  # [N, K]
    one_hot = classes is not None and np.ndim(targets) == 1
    labels = torch.as_tensor(np.asarray(targets), dtype=torch.long, device=x.device) if one_hot else None  # [N]
    dual = _dual_pays(max(len(f.train) for f in folds), x.shape[2])
    blocks = None if dual else _held_out_blocks(x, y, folds, labels)
    for k, fold in enumerate(folds):
        dev_x = _rows(x, fold.dev, 1)  # [C, n_dev, D]: gathered once (unless consecutive), for the sums and outputs
        strengths = tuple(a * len(fold.train) for a in alphas) if relative else alphas
        if dual:
            train_index = torch.as_tensor(fold.train, device=x.device)
            mean, scale, weights, offset = _solve_dual(x[:, train_index], y[train_index], strengths)
        else:
            if blocks is not None:  # every row but this fold's test and dev rows
                dev_labels = None if labels is None else _rows(labels, fold.dev, 0)  # [n_dev]
                sums = blocks.total - blocks.per_test[k] - _sums_of(dev_x, _rows(y, fold.dev, 0), dev_labels)
            else:
                sums = _sums(x, y, fold.train, labels)
            mean, scale, weights, offset = _solve(sums, strengths)
        dev = _outputs(dev_x, mean, scale, weights, offset)  # [C, A, n_dev, K]
        del dev_x
        chosen = choose(dev, fold.dev)  # [C]
        picked = weights[torch.arange(len(chosen), device=x.device), torch.as_tensor(chosen, device=x.device)][:, None]
        # [C, 1, D, K]
        if blocks is not None:
            test_x = blocks.test_rows.pop(0)  # [C, n_test, D]: gathered for its sums, let go after this fold
        else:
            test_x = _rows(x, fold.test, 1)  # [C, n_test, D]
        test = _outputs(test_x, mean, scale, picked, offset)[:, 0]  # [C, n_test, K]
        del test_x
        yield FoldOutputs(dev, test, chosen)


@dataclass(frozen=True)
class _HeldOut:
    """Every test set's sums, their total, and the test sets' rows themselves [C, n_test, D] (gathered once, for the
    sums and for each fold's test outputs; a fold's rows are popped, so they go once that fold is done)."""

    total: _Sums
    per_test: list[_Sums]
    test_rows: list[torch.Tensor]


def _held_out_blocks(
    x: torch.Tensor, y: torch.Tensor, folds: list[Fold], labels: torch.Tensor | None = None
) -> _HeldOut | None:
    """Under cross-validation (test sets partition the rows, train = the rest minus dev): the sums of
    every test set and their total, so each fold's training sums cost only its dev rows. None otherwise.

    The test rows stay gathered until their fold's outputs (one gather of every row, not two: one [C, N, D] copy
    in all, the second of screen_bytes' two; 12 GB of new memory less in the 100k cloze's screen, issue #75)."""
    n = x.shape[1]
    tests = np.concatenate([f.test for f in folds])
    partition = len(folds) > 1 and len(tests) == n and len(np.unique(tests)) == n
    if not partition or any(len(f.train) + len(f.dev) + len(f.test) != n for f in folds):
        return None
    indices = [torch.as_tensor(f.test, device=x.device) for f in folds]  # [n_test] each
    test_rows = [x[:, index] for index in indices]  # [C, n_test, D] each
    per_test = [
        _sums_of(rows, y[index], None if labels is None else labels[index])
        for rows, index in zip(test_rows, indices, strict=True)
    ]
    total = per_test[0]
    for block in per_test[1:]:
        total = total + block
    return _HeldOut(total, per_test, test_rows)
