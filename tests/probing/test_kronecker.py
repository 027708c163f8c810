"""The Kronecker curvature of a whitened softmax probe (probing/kronecker.py): the mean Hessian factor built from the
slope, its inverse per feature, and exactness where every row has the same probabilities."""

import pytest
import torch

from bertlens.probing.kronecker import softmax_curvature
from bertlens.probing.logistic import _loss_and_gradient


def slope_and_probabilities(models: int, n: int, classes: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(models, n, classes, generator=g, dtype=torch.float64) * 2  # [C, n, K]
    labels = torch.randint(0, classes, (n,), generator=g)
    p = logits.softmax(-1)
    return (p - torch.nn.functional.one_hot(labels, classes).double()) / n, labels, p


@pytest.mark.parametrize("models,classes", [(1, 3), (2, 7), (3, 30)])
def test_the_factor_built_from_the_slope_is_the_mean_of_diag_p_minus_p_p(models, classes):
    slope, labels, p = slope_and_probabilities(models, 400, classes)
    penalty = torch.ones(models, 5, classes, dtype=torch.float64)
    curvature = softmax_curvature(slope, labels, penalty)
    direct = torch.diag_embed(p.mean(1)) - torch.einsum("cnk,cnl->ckl", p, p) / p.shape[1]  # [C, K, K]
    rebuilt = curvature.rotation @ torch.diag_embed(curvature.values) @ curvature.rotation.transpose(1, 2)
    torch.testing.assert_close(rebuilt, direct, atol=1e-12, rtol=0)


def test_solve_inverts_every_features_block_and_leaves_the_bias_shift_out():
    models, dim, classes = 2, 6, 5
    slope, labels, p = slope_and_probabilities(models, 300, classes, seed=1)
    pen = torch.rand(models, dim, 1, dtype=torch.float64) * 10.0 ** torch.randint(-4, 1, (models, dim, 1))  # spread
    curvature = softmax_curvature(slope, labels, pen.expand(models, dim, classes))
    coef = torch.randn(models, dim, classes, dtype=torch.float64)
    bias = torch.randn(models, 1, classes, dtype=torch.float64)
    solved_coef, solved_bias = curvature.solve(coef, bias)
    hbar = torch.diag_embed(p.mean(1)) - torch.einsum("cnk,cnl->ckl", p, p) / p.shape[1]  # [C, K, K]
    for c in range(models):
        for j in range(dim):
            block = hbar[c] + 2 * pen[c, j, 0] * torch.eye(classes, dtype=torch.float64)
            torch.testing.assert_close(block @ solved_coef[c, j], coef[c, j])
        # the bias's block is Hbar, singular along the shift of every logit: its pseudo-inverse
        torch.testing.assert_close(solved_bias[c, 0], torch.linalg.pinv(hbar[c]) @ bias[c, 0])
        assert abs(float(solved_bias[c, 0].sum())) < 1e-10


def test_where_every_row_has_the_same_probabilities_one_solve_is_a_newton_step():
    """At zero coefficients on centred, whitened features (as the probes' first strength starts) K-FAC's two factors
    are exact: E[x x'] = I, and H_i is the same for every row. So the solve gives the Hessian's inverse: one step
    along it from zero is Newton's, checked against the Hessian autograd computes."""
    g = torch.Generator().manual_seed(2)
    n, dim, classes = 200, 4, 3
    z = torch.randn(n, dim, generator=g, dtype=torch.float64) * torch.tensor([3.0, 1.0, 0.3, 0.05], dtype=torch.float64)
    z = z - z.mean(0)
    values, vectors = torch.linalg.eigh(z.T @ z / n)
    x = (z @ vectors * values.rsqrt())[None]  # [1, n, D]: x'x / n = I, mean 0
    labels = torch.randint(0, classes, (n,), generator=g)
    penalty = (1.0 / (2 * 0.1 * n) / values)[None, :, None].expand(1, dim, classes)  # [1, D, K], C = 0.1

    def objective(flat: torch.Tensor) -> torch.Tensor:
        coef, bias = flat[: dim * classes].view(1, dim, classes), flat[dim * classes :].view(1, 1, classes)
        logits = torch.bmm(x, coef) + bias  # [1, n, K]
        return torch.nn.functional.cross_entropy(logits[0], labels) + (penalty * coef * coef).sum()

    zero = torch.zeros(dim * classes + classes, dtype=torch.float64)
    gradient = torch.autograd.functional.jacobian(objective, zero)  # [P]
    hessian = torch.autograd.functional.hessian(objective, zero)  # [P, P]
    logits = torch.zeros(1, n, classes, dtype=torch.float64)
    _, slope = _loss_and_gradient(logits, labels, classes)
    curvature = softmax_curvature(slope, labels, penalty)
    coef_step, bias_step = curvature.solve(
        gradient[: dim * classes].view(1, dim, classes), gradient[dim * classes :].view(1, 1, classes)
    )
    newton = torch.linalg.pinv(hessian) @ gradient  # [P]: the Hessian is singular only along the bias's shift
    torch.testing.assert_close(coef_step.reshape(-1), newton[: dim * classes], atol=1e-10, rtol=1e-8)
    torch.testing.assert_close(bias_step.reshape(-1), newton[dim * classes :], atol=1e-10, rtol=1e-8)
