"""Label sets' one-vs-rest logistic (probing/newton_cg.py through logistic.fit_logistic): every label solved to
convergence, so the probabilities are scikit-learn's converged ones and a label's fit does not depend on the labels
or strengths fitted beside it."""

import warnings

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from bertlens.probing.logistic import fit_logistic

STRENGTHS = (0.01, 0.1, 1.0, 10.0)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    n, d, labels = 600, 48, 5
    x = (rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) * np.exp(rng.normal(size=d))).astype(np.float32)
    x += rng.normal(size=d).astype(np.float32) * 3  # anisotropic and off-centre, as BERT features are
    w = rng.normal(size=(d, labels)) / np.sqrt(d)
    standard = (x - x.mean(0)) / x.std(0, ddof=1)
    y = standard @ w + np.log([0.02, 0.05, 0.1, 0.3, 0.5]) + rng.logistic(size=(n, labels)) > 0
    return x, standard, y


def probabilities(x, y, strengths):
    fit = fit_logistic(torch.from_numpy(x[None]), y, strengths, max_iter=30, tol=1e-6)
    return torch.sigmoid(fit.decision(torch.from_numpy(x[None]))).numpy()[0]  # [R, n, L]


def test_every_label_matches_scikit_learns_converged_fit(problem):
    x, standard, y = problem
    ours = probabilities(x, y, STRENGTHS)
    for r, c in enumerate(STRENGTHS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # newton-cg's line search reports rounding at tol 1e-10
            reference = np.stack(
                [LogisticRegression(C=c, solver="newton-cg", tol=1e-10, max_iter=1000).fit(standard, y[:, label])
                 .predict_proba(standard)[:, 1] for label in range(y.shape[1])], axis=1)  # fmt: skip
        assert np.abs(ours[r] - reference).max() < 1e-4, c


def test_a_label_is_fitted_the_same_alone_or_beside_others(problem):
    x, _, y = problem
    together = probabilities(x, y, STRENGTHS)
    alone = probabilities(x, y[:, [0, 1]], (1.0,))  # two labels, one strength
    assert np.abs(together[2][:, :2] - alone[0]).max() < 1e-5


def test_curvature_products_in_bfloat16_stop_where_float32_products_stop(problem):
    """The bfloat16 copy only shapes each step's direction: the float32 gradient decides where a column stops, so
    the solution is float32's (an inexact Newton method), not bfloat16's."""
    from bertlens.probing.newton_cg import LabelSetProblem, newton_cg

    _, standard, y = problem
    values, vectors = np.linalg.eigh(standard.T @ standard / len(standard))
    x = torch.from_numpy((standard @ vectors / np.sqrt(values)).astype(np.float32))[None]  # [1, n, D] whitened
    x_t = x.transpose(1, 2).contiguous()
    n, labels = x.shape[1], y.shape[1]
    targets = torch.from_numpy(y.astype(np.float32)).repeat(1, 2)  # two strengths x the labels
    per_dim = torch.from_numpy(1 / values).float()[None, :, None]  # [1, D, 1]: ||w||^2 in the whitened basis
    penalty = torch.cat([per_dim.expand(1, -1, labels) / (2 * c * n) for c in (0.1, 10.0)], dim=-1)  # [1, D, M]
    solved = []
    for rough in (None, (x.to(torch.bfloat16), x_t.to(torch.bfloat16))):
        coef, bias = torch.zeros(1, x.shape[2], 2 * labels), torch.zeros(1, 1, 2 * labels)
        steps = newton_cg(LabelSetProblem(x, x_t, targets, penalty, rough), coef, bias, 60, 1e-8)
        assert steps < 60
        solved.append(torch.sigmoid(torch.bmm(x, coef) + bias))
    assert (solved[0] - solved[1]).abs().max() < 1e-5


def whitened_problem(standard, y, strengths):
    """The fixture's features whitened, with each label at each strength as its own column."""
    from bertlens.probing.newton_cg import LabelSetProblem

    values, vectors = np.linalg.eigh(standard.T @ standard / len(standard))
    x = torch.from_numpy((standard @ vectors / np.sqrt(values)).astype(np.float32))[None]  # [1, n, D] whitened
    n, labels = x.shape[1], y.shape[1]
    targets = torch.from_numpy(y.astype(np.float32)).repeat(1, len(strengths))  # [n, M]
    per_dim = torch.from_numpy(1 / values).float()[None, :, None]  # [1, D, 1]
    penalty = torch.cat([per_dim.expand(1, -1, labels) / (2 * c * n) for c in strengths], dim=-1)  # [1, D, M]
    return LabelSetProblem(x, x.transpose(1, 2).contiguous(), targets, penalty)


def test_without_pairs_the_preconditioner_is_the_jacobi_diagonal():
    from bertlens.probing.newton_cg import CurvaturePairs

    generator = torch.Generator().manual_seed(0)
    residual = (torch.randn(2, 7, 3, generator=generator), torch.randn(2, 1, 3, generator=generator))
    jacobi = (torch.rand(2, 7, 3, generator=generator) + 0.1, torch.rand(2, 1, 3, generator=generator) + 0.1)
    got = CurvaturePairs.empty(residual).precondition(jacobi, residual)
    assert torch.equal(got[0], jacobi[0] * residual[0]) and torch.equal(got[1], jacobi[1] * residual[1])


def test_the_pairs_inverse_maps_the_newest_curvature_back_to_its_step():
    """BFGS's secant equation: the inverse built from pairs (s, H s) sends the newest H s to its s, per column."""
    from bertlens.probing.newton_cg import PAIRS, CurvaturePairs

    generator = torch.Generator().manual_seed(1)
    d, columns = 9, 4
    half = torch.randn(columns, d + 1, d + 1, generator=generator, dtype=torch.float64)
    hessian = half @ half.mT + torch.eye(d + 1, dtype=torch.float64)  # [M, D+1, D+1] one per column, positive definite

    def split(v):  # [M, D+1] -> (coef [1, D, M], bias [1, 1, M])
        return v[:, :d].T[None].contiguous(), v[:, d:].T[None].contiguous()

    like = split(torch.zeros(columns, d + 1, dtype=torch.float64))
    pairs = CurvaturePairs.empty(like)
    live = torch.ones(1, 1, columns, dtype=torch.bool)
    for step in range(PAIRS):
        s = torch.randn(columns, d + 1, generator=generator, dtype=torch.float64)
        y = torch.einsum("mij,mj->mi", hessian, s)
        pairs.record(step, torch.arange(columns), split(s), split(y), live)
    jacobi = split(torch.rand(columns, d + 1, generator=generator, dtype=torch.float64) + 0.5)
    back = pairs.precondition(jacobi, split(y))
    assert torch.allclose(back[0], split(s)[0], atol=1e-9) and torch.allclose(back[1], split(s)[1], atol=1e-9)


def test_the_last_newton_steps_pairs_save_curvature_products_and_end_where_jacobi_alone_ends(problem, monkeypatch):
    import bertlens.probing.newton_cg as newton

    _, standard, y = problem
    counted = []
    product = newton.LabelSetProblem.curvature_product

    def counting(self, curvature, search):
        counted.append(search[0].shape[-1])  # the columns this product carried
        return product(self, curvature, search)

    monkeypatch.setattr(newton.LabelSetProblem, "curvature_product", counting)
    solved, products = [], []
    for pairs in (0, newton.PAIRS):  # Jacobi alone, then with the pairs
        monkeypatch.setattr(newton, "PAIRS", pairs)
        task = whitened_problem(standard, y, (0.1, 10.0))
        coef, bias = torch.zeros(1, task.x.shape[2], task.targets.shape[1]), torch.zeros(1, 1, task.targets.shape[1])
        counted.clear()
        assert newton.newton_cg(task, coef, bias, 60, 1e-8) < 60
        solved.append(torch.sigmoid(torch.bmm(task.x, coef) + bias))
        products.append((len(counted), sum(counted)))  # (conjugate-gradient steps, columns they carried)
    assert products[1][0] < 0.8 * products[0][0] and products[1][1] < products[0][1], products  # 49 < 73, 244 < 272
    assert (solved[0] - solved[1]).abs().max() < 1e-5


@pytest.mark.parametrize("fused", [True, False])
def test_the_line_search_takes_x_d_from_the_conjugate_gradients_and_ends_where_its_own_product_ends(
    problem, monkeypatch, fused
):
    """x d + db is the sum of the products' values x s + b weighted as d sums the steps s: equal to the product
    with d to float32 rounding, and the search then computes no product (one logits product per solve: the start)."""
    import bertlens.probing.newton_cg as newton

    if fused:
        pytest.importorskip("numba")
    else:
        monkeypatch.setattr(newton, "applies", lambda x: False)
    _, standard, y = problem
    task = whitened_problem(standard, y, (0.1, 10.0))
    columns = task.targets.shape[1]
    coef, bias = torch.zeros(1, task.x.shape[2], columns), torch.zeros(1, 1, columns)
    logits = task.logits(coef, bias)
    p = torch.sigmoid(logits)
    error = (p - task.targets) / task.x.shape[1]
    gradient = (task.back(error) + 2 * task.penalty * coef, error.sum(dim=1, keepdim=True))
    forcing = torch.full_like(gradient[1], 1e-3)
    step, _, moved = newton._conjugate_gradient(task, p * (1 - p) / task.x.shape[1], gradient, forcing, None)
    product = task.logits(*step)  # [1, n, M]
    assert moved is not None and float((moved - product).abs().max()) <= 1e-5 * float(product.abs().max())

    def solve():
        counted = []
        logits_of = newton.LabelSetProblem.logits
        monkeypatch.setattr(newton.LabelSetProblem, "logits", lambda self, *a: counted.append(1) or logits_of(self, *a))
        coef, bias = torch.zeros(1, task.x.shape[2], columns), torch.zeros(1, 1, columns)
        steps = newton.newton_cg(task, coef, bias, 60, 1e-8)
        monkeypatch.setattr(newton.LabelSetProblem, "logits", logits_of)
        return torch.sigmoid(torch.bmm(task.x, coef) + bias), len(counted), steps

    summed = solve()  # x d from the conjugate gradients
    original = newton._conjugate_gradient
    monkeypatch.setattr(newton, "_conjugate_gradient", lambda *a: (*original(*a)[:2], None))
    direct = solve()  # x d from the search's own product
    assert summed[1] == 1 and direct[1] == 1 + direct[2], (summed[1:], direct[1:])  # the start; then one per step
    assert (summed[0] - direct[0]).abs().max() < 1e-5
