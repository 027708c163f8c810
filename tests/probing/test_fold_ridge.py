"""Ridge over folds from sufficient statistics == a ridge fitted on each fold's training rows."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import Ridge

from bertlens.probing.fold_ridge import _sums, _targets_matrix, ridge_over_folds
from bertlens.tasks.splits import Fold, make_folds


def _data(n=500, d=12, seed=0):
    rng = np.random.default_rng(seed)
    # a large shared offset (anisotropy) and uneven scales: what makes naive sum subtraction lose precision
    x = (rng.normal(size=(n, d)) * rng.uniform(0.1, 5, d) + rng.normal(size=d) * 50).astype(np.float32)
    labels = (x[:, 0] > np.median(x[:, 0])).astype(int) + 2 * (x[:, 1] > np.median(x[:, 1]))
    values = (x[:, 2] + rng.normal(size=n)).astype(np.float32)
    return x, labels, values


def _cv(labels, folds=5):
    return make_folds({"all": np.arange(len(labels))}, labels, stratify=True, cv_folds=folds, seed=0, dev_fraction=0.1)


def _first(dev, rows):
    return np.zeros(dev.shape[0], dtype=int)


@pytest.mark.parametrize("given_splits", [False, True])
def test_classification_outputs_equal_sklearn_ridge_on_each_fold(given_splits):
    x, labels, _ = _data()
    folds = [Fold(np.arange(300), np.arange(300, 380), np.arange(380, 500))] if given_splits else _cv(labels)
    alphas = (1e-3, 1e-1)
    outs = ridge_over_folds(torch.from_numpy(x.copy())[None], labels, folds, alphas, _first, classes=4, relative=True)
    for fold, out in zip(folds, outs, strict=True):
        train = x[fold.train]
        mean, std = train.mean(0), train.std(0, ddof=1)
        onehot = np.eye(4)[labels[fold.train]]
        for a, alpha in enumerate(alphas):
            reference = Ridge(alpha=alpha * len(fold.train)).fit((train - mean) / std, onehot)
            np.testing.assert_allclose(out.dev[0, a].numpy(), reference.predict((x[fold.dev] - mean) / std), atol=2e-4)
        reference = Ridge(alpha=alphas[0] * len(fold.train)).fit((train - mean) / std, onehot)
        np.testing.assert_allclose(out.test[0].numpy(), reference.predict((x[fold.test] - mean) / std), atol=2e-4)


def test_regression_equals_sklearn_ridge_and_test_uses_the_chosen_strength():
    x, labels, values = _data()
    folds = _cv(labels)
    alphas = (1.0, 100.0)
    chosen_by_fold = []

    def last(dev, rows):
        chosen_by_fold.append(dev.shape[1])
        return np.full(dev.shape[0], 1)

    outs = list(ridge_over_folds(torch.from_numpy(x.copy())[None], values, folds, alphas, last))
    assert chosen_by_fold == [len(alphas)] * len(folds)  # every strength reaches the chooser
    for fold, out in zip(folds, outs, strict=True):
        train = x[fold.train]
        mean, std = train.mean(0), train.std(0, ddof=1)
        reference = Ridge(alpha=alphas[1]).fit((train - mean) / std, values[fold.train])  # alpha 100: the chosen one
        np.testing.assert_allclose(out.test[0, :, 0].numpy(), reference.predict((x[fold.test] - mean) / std), atol=1e-4)
        assert out.chosen.tolist() == [1]


def test_candidates_in_one_batch_are_fitted_independently():
    x, labels, _ = _data()
    folds = _cv(labels)
    rng = np.random.default_rng(1)
    other = rng.normal(size=x.shape).astype(np.float32)
    batch = torch.from_numpy(np.stack([x, other]))
    together = list(ridge_over_folds(batch, labels, folds, (1e-2,), _first, classes=4, relative=True))
    alone = list(ridge_over_folds(torch.from_numpy(other.copy())[None], labels, folds, (1e-2,), _first, 4, True))
    for a, b in zip(together, alone, strict=True):
        np.testing.assert_allclose(a.test[1].numpy(), b.test[0].numpy(), atol=1e-5)


def test_a_system_rounding_made_indefinite_is_solved_with_jitter_not_an_error():
    from bertlens.probing.fold_ridge import _solve_one

    system = torch.tensor([[[1.0, 0.0], [0.0, -1e-7]]])  # what float32 cancellation leaves of a constant feature
    weights = _solve_one(system, 0.0, torch.ones(1, 2, 3))
    assert torch.isfinite(weights).all() and weights.shape == (1, 2, 3)
    np.testing.assert_allclose(weights[0, 0].numpy(), 1.0, rtol=1e-5)


def test_an_indefinite_system_does_not_regularise_the_others_in_its_batch():
    from bertlens.probing.fold_ridge import _solve_one

    rng = np.random.default_rng(0)
    basis = rng.normal(size=(6, 6))
    conditioned = basis @ np.diag(10.0 ** -np.arange(6)) @ basis.T  # SPD, condition number 1e5
    broken = np.diag([1.0, 1.0, 1.0, 1.0, 1.0, -1e-3])  # indefinite: it needs jitter of 1e-2 to factor
    rhs = torch.from_numpy(rng.normal(size=(2, 6, 3)))
    together = _solve_one(torch.tensor(np.stack([conditioned, broken])), 0.0, rhs)
    alone = _solve_one(torch.tensor(conditioned[None]), 0.0, rhs[:1])
    np.testing.assert_array_equal(together[0].numpy(), alone[0].numpy())
    np.testing.assert_allclose(alone[0].numpy(), np.linalg.solve(conditioned, rhs[0].numpy()), rtol=1e-4)


def test_the_lean_solve_gives_the_whole_matrix_expressions_numbers_bit_for_bit():
    """_solve standardises over the gram in blocks and shifts the diagonal in float32: the same numbers as the
    expressions it replaced, (gram - n m m^T) / (s s^T) and (cov + a I).double(), element for element."""
    from bertlens.probing.fold_ridge import COV_BLOCK, _solve, _Sums

    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.normal(size=(2, 300, COV_BLOCK + 44)).astype(np.float32))  # [C, n, D]: two blocks
    y = torch.from_numpy(rng.normal(size=(300, 1)).astype(np.float32))
    sums = _Sums(torch.bmm(x.transpose(1, 2), x), x.sum(dim=1), torch.matmul(x.transpose(1, 2), y), y.sum(0), 300)
    n, mean = 300, sums.total / 300
    variance = (sums.gram.diagonal(dim1=1, dim2=2) - n * mean * mean) / (n - 1)
    scale = variance.clamp(min=0).sqrt().clamp(min=1e-6)
    cov = (sums.gram - n * mean[:, :, None] * mean[:, None, :]) / (scale[:, :, None] * scale[:, None, :])
    rhs = ((sums.cross - mean[:, :, None] * sums.target_total) / scale[:, :, None]).double()
    eye = torch.eye(cov.shape[-1])
    expected = [torch.cholesky_solve(rhs, torch.linalg.cholesky((cov + a * eye).double())).float() for a in (1.0, 30.0)]
    _, _, weights, _ = _solve(sums, (1.0, 30.0))
    for k in range(2):
        assert torch.equal(weights[:, k], expected[k])


def test_the_two_triangular_solves_equal_pytorchs_cholesky_solve():
    from bertlens.probing.fold_ridge import _cholesky_solve

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3, 200, 40, generator=generator, dtype=torch.float64)
    factor = torch.linalg.cholesky(x.mT @ x + 0.1 * torch.eye(40, dtype=torch.float64))  # [3, 40, 40]
    rhs = torch.randn(3, 40, 7, generator=generator, dtype=torch.float64)
    solved = _cholesky_solve(rhs, factor)
    assert torch.allclose(solved, torch.cholesky_solve(rhs, factor), rtol=1e-12, atol=1e-14)
    assert torch.allclose(factor @ factor.mT @ solved, rhs, atol=1e-9)


def test_class_sums_added_by_label_equal_the_product_with_the_one_hot_targets():
    """X'Y for class ids is each class's sum of rows: added up by label (index_add) it equals the product with the
    one-hot matrix up to float32 rounding of the order of the sums; the other statistics are the same computation."""
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((2, 500, 16)).astype(np.float32))  # [C, N, D]
    labels = rng.integers(0, 9, 500)
    labels[:9] = np.arange(9)  # every class present
    rows = np.sort(rng.choice(500, 321, replace=False))
    y = _targets_matrix(labels, 9, x.device)  # [N, K] one-hot
    by_product = _sums(x, y, rows)
    by_label = _sums(x, y, rows, torch.as_tensor(labels))
    assert by_label.cross.shape == (2, 16, 9)
    torch.testing.assert_close(by_label.cross, by_product.cross, rtol=1e-6, atol=1e-5)
    expected = np.stack([x[:, rows[labels[rows] == k]].sum(dim=1).numpy() for k in range(9)], axis=-1)  # [C, D, K]
    np.testing.assert_allclose(by_label.cross.numpy(), expected, rtol=1e-5, atol=1e-5)
    assert torch.equal(by_label.gram, by_product.gram) and torch.equal(by_label.total, by_product.total)


@pytest.mark.parametrize("relative", [False, True])
def test_fewer_rows_than_features_take_the_dual_form_with_the_primal_outputs(relative, monkeypatch):
    """n < D: the kernel form's outputs equal a float64 ridge's, and the primal form's (forced here) within its
    float32 sums' rounding (near interpolation the primal is the less exact one: 2e-4 against 3e-7 here)."""
    import bertlens.probing.fold_ridge as fold_ridge

    rng = np.random.default_rng(3)
    x = (rng.normal(size=(2, 90, 200)) * rng.uniform(0.1, 5, 200) + 20).astype(np.float32)  # [C, N, D], anisotropic
    labels = rng.integers(0, 3, 90)
    folds = _cv(labels, folds=3)
    assert fold_ridge._dual_pays(max(len(f.train) for f in folds), x.shape[2])
    alphas = (1e-3, 1e-1) if relative else (1.0, 100.0)
    args = (labels, folds, alphas, _first, 3, relative)
    dual = list(ridge_over_folds(torch.from_numpy(x.copy()), *args))
    monkeypatch.setattr(fold_ridge, "_dual_pays", lambda rows, width: False)
    primal = list(ridge_over_folds(torch.from_numpy(x.copy()), *args))
    for fold, d, p in zip(folds, dual, primal, strict=True):
        for c in range(x.shape[0]):
            train = x[c, fold.train].astype(np.float64)
            mean, std = train.mean(0), train.std(0, ddof=1)
            z, onehot = (train - mean) / std, np.eye(3)[labels[fold.train]]
            for a, alpha in enumerate(alphas):
                strength = alpha * len(fold.train) if relative else alpha
                w = np.linalg.solve(z.T @ z + strength * np.eye(z.shape[1]), z.T @ (onehot - onehot.mean(0)))
                reference = (x[c, fold.dev] - mean) / std @ w + onehot.mean(0)  # [n_dev, 3] float64
                np.testing.assert_allclose(d.dev[c, a].numpy(), reference, atol=5e-6)
                np.testing.assert_allclose(p.dev[c, a].numpy(), reference, atol=1e-3)
        np.testing.assert_allclose(d.test.numpy(), p.test.numpy(), atol=1e-3)
    assert not np.allclose(dual[0].dev[:, 0].numpy(), dual[0].dev[:, 1].numpy(), atol=1e-3)  # the strengths differ


def test_the_dual_form_equals_sklearn_ridge_on_few_rows():
    rng = np.random.default_rng(4)
    x = (rng.normal(size=(60, 150)) * rng.uniform(0.1, 5, 150) + 7).astype(np.float32)
    values = (x[:, 0] + rng.normal(size=60)).astype(np.float32)
    fold = Fold(np.arange(40), np.arange(40, 50), np.arange(50, 60))
    (out,) = ridge_over_folds(torch.from_numpy(x.copy())[None], values, [fold], (3.0,), _first)
    train = x[fold.train]
    mean, std = train.mean(0), train.std(0, ddof=1)
    reference = Ridge(alpha=3.0).fit((train - mean) / std, values[fold.train])
    np.testing.assert_allclose(out.dev[0, 0, :, 0].numpy(), reference.predict((x[fold.dev] - mean) / std), atol=1e-4)
    np.testing.assert_allclose(out.test[0, :, 0].numpy(), reference.predict((x[fold.test] - mean) / std), atol=1e-4)


def test_consecutive_rows_are_read_in_place_and_sum_as_gathered_ones():
    from bertlens.probing.fold_ridge import _rows, _sums

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 40, 6, generator=generator)  # [C, N, D]
    y = torch.randn(40, 3, generator=generator)  # [N, K]
    consecutive, scattered = np.arange(5, 30), np.array([5, 7, 6, 9])
    assert _rows(x, consecutive, 1)._base is x  # a view: no copy of the rows
    assert _rows(x, scattered, 1)._base is None
    assert torch.equal(_rows(x, scattered, 1), x[:, torch.as_tensor(scattered)])
    in_place, gathered = _sums(x, y, consecutive), _sums(x.clone(), y.clone(), consecutive[::-1].copy())
    assert torch.equal(in_place.total, torch.as_tensor(x[:, 5:30].sum(dim=1)))
    torch.testing.assert_close(in_place.gram, gathered.gram)  # the same rows, summed in another order
    torch.testing.assert_close(in_place.cross, gathered.cross)
