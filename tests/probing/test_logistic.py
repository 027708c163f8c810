"""The batched probe against scikit-learn's LogisticRegression."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from bertlens.probing.logistic import PATH_MIN_CLASSES, _loss_and_gradient, fit_logistic
from bertlens.representation.logits import logit_loss


@pytest.mark.parametrize("classes", [2, 4])
def test_float64_fit_equals_scikit_learn(classes):
    X, y = make_classification(n_samples=1500, n_features=30, n_informative=10, n_classes=classes, random_state=0)
    train, test = slice(0, 1000), slice(1000, None)
    mean, std = X[train].mean(0), X[train].std(0, ddof=1)
    features = torch.tensor(np.stack([X[train], 3 * X[train] - 2]), dtype=torch.float32)  # [2, n, D]
    fit = fit_logistic(features, y[train], (0.01, 1.0), max_iter=500, tol=1e-9, compute_dtype=torch.float64)
    ours = fit.predict(torch.tensor(np.stack([X[test], 3 * X[test] - 2]), dtype=torch.float32)).numpy()  # [2, R, n]
    for r, c in enumerate((0.01, 1.0)):
        ref = LogisticRegression(C=c, max_iter=5000, tol=1e-10).fit((X[train] - mean) / std, y[train])
        expected = ref.predict((X[test] - mean) / std)
        assert (ours[0, r] == expected).mean() >= 0.995
        assert (ours[1, r] == expected).mean() >= 0.995  # standardisation makes an affine copy equivalent
        if classes == 2:
            assert np.abs(fit.weight[0, :, r].numpy() - ref.coef_[0]).max() < 1e-3


def test_default_fast_fit_is_within_half_a_point_of_scikit_learn():
    X, y = make_classification(n_samples=8000, n_features=64, n_informative=20, random_state=1)
    train, test = slice(0, 6000), slice(6000, None)
    mean, std = X[train].mean(0), X[train].std(0, ddof=1)
    fit = fit_logistic(torch.tensor(X[None, train], dtype=torch.float32), y[train], (0.1, 1.0))
    ours = fit.predict(torch.tensor(X[None, test], dtype=torch.float32)).numpy()[0]
    for r, c in enumerate((0.1, 1.0)):
        ref = LogisticRegression(C=c, max_iter=2000).fit((X[train] - mean) / std, y[train])
        assert abs((ours[r] == y[test]).mean() - (ref.predict((X[test] - mean) / std) == y[test]).mean()) <= 0.005


def test_per_candidate_strengths_reach_the_grid_solutions():
    rng = np.random.default_rng(7)
    x = torch.from_numpy(rng.normal(size=(2, 300, 6)))
    y = (x[0, :, 0].numpy() + 0.5 * rng.normal(size=300) > 0).astype(int)
    grid = fit_logistic(x.float(), y, (0.1, 1.0), max_iter=200, tol=1e-9, compute_dtype=torch.float64)
    own = fit_logistic(
        x.float(),
        y,
        (0.1, 1.0),
        max_iter=200,
        tol=1e-9,
        compute_dtype=torch.float64,
        candidate_strengths=np.array([0.1, 1.0]),
    )
    assert own.weight.shape == (2, 6, 1)
    torch.testing.assert_close(own.weight[0, :, 0], grid.weight[0, :, 0], atol=1e-4, rtol=1e-3)  # candidate 0 at C=0.1
    torch.testing.assert_close(own.weight[1, :, 0], grid.weight[1, :, 1], atol=1e-4, rtol=1e-3)  # candidate 1 at C=1


@pytest.mark.parametrize("outputs", [1, 5])
def test_written_out_gradient_equals_autograd(outputs):
    torch.manual_seed(0)
    strengths, n = 3, 40
    logits = torch.randn(2, n, strengths * outputs, dtype=torch.float64, requires_grad=True)  # [C, n, R*K]
    y = torch.randint(0, 2 if outputs == 1 else outputs, (n,))
    grouped = logits.view(2, n, strengths, outputs)
    per_model = [logit_loss(grouped[c, :, r], y) for c in range(2) for r in range(strengths)]  # mean CE each
    torch.stack(per_model).sum().backward()
    loss, gradient = _loss_and_gradient(logits.detach(), y, outputs)
    torch.testing.assert_close(loss, torch.stack(per_model).sum().detach())
    torch.testing.assert_close(gradient, logits.grad)


def _objective(fit, features: torch.Tensor, y: np.ndarray, r: int, strength: float) -> float:
    """scikit-learn's objective divided by n for the fit's r-th output group, at C = strength (multi-class)."""
    logits = fit.decision(features)[0, r].double()  # [n, K]
    k = fit.outputs
    weight = fit.weight[0, :, r * k : (r + 1) * k].double()  # [D, K]
    cross_entropy = torch.nn.functional.cross_entropy(logits, torch.as_tensor(y))
    return float(cross_entropy + (weight**2).sum() / (2 * strength * len(y)))


def test_the_warm_started_path_reaches_a_lower_objective_than_the_grid_fitted_jointly():
    # 40 classes, 20 steps: the joint fit from zero leaves the weak penalties far from their optimum
    X, y = make_classification(
        n_samples=600, n_features=80, n_informative=40, n_classes=40, n_clusters_per_class=1, random_state=3
    )
    features = torch.tensor(X[None], dtype=torch.float32)
    grid = (0.01, 0.1, 1.0, 10.0)
    path = fit_logistic(features, y, grid, max_iter=20, warm_path=True)
    joint = fit_logistic(features, y, grid, max_iter=20, warm_path=False)
    for r, c in enumerate(grid):
        assert _objective(path, features, y, r, c) <= _objective(joint, features, y, r, c)
    assert _objective(path, features, y, 3, 10.0) < 0.5 * _objective(joint, features, y, 3, 10.0)


def test_the_path_does_not_depend_on_the_order_of_the_grid():
    X, y = make_classification(n_samples=400, n_features=12, n_informative=6, n_classes=3, random_state=4)
    features = torch.tensor(X[None], dtype=torch.float32)
    ascending = fit_logistic(features, y, (0.1, 1.0), compute_dtype=torch.float64, warm_path=True)
    descending = fit_logistic(features, y, (1.0, 0.1), compute_dtype=torch.float64, warm_path=True)
    torch.testing.assert_close(ascending.weight[..., :3], descending.weight[..., 3:])  # C = 0.1 in both
    torch.testing.assert_close(ascending.weight[..., 3:], descending.weight[..., :3])


def test_few_classes_keep_the_joint_fit_and_many_take_the_path():
    for classes, path in ((3, False), (PATH_MIN_CLASSES, True)):
        X, y = make_classification(
            n_samples=40 * classes,
            n_features=20,
            n_informative=10,
            n_classes=classes,
            n_clusters_per_class=1,
            random_state=5,
        )
        features = torch.tensor(X[None], dtype=torch.float32)
        default = fit_logistic(features, y, (0.1, 1.0), max_iter=10)
        forced = fit_logistic(features, y, (0.1, 1.0), max_iter=10, warm_path=path)
        other = fit_logistic(features, y, (0.1, 1.0), max_iter=10, warm_path=not path)
        torch.testing.assert_close(default.weight, forced.weight)
        assert not torch.allclose(default.weight, other.weight)
