"""Learn ScalarMix weights from per-layer pooled vectors (exact for linear poolers).

Classification: softmax-mixed layers -> standardised -> logistic probe, trained jointly.
Regression and label sets: the same, with a linear probe's squared error to the standardised targets, or one
sigmoid per label (binary cross-entropy).
Similarity: weights that make cos(mix(u), mix(v)) track the gold score (MSE to score / max).
"""

from __future__ import annotations

import numpy as np
import torch

from bertlens.representation.logits import logit_loss, logit_width
from bertlens.representation.mixers import mix_probabilities


def layer_covariance(x: torch.Tensor) -> torch.Tensor:
    """x [n, K, H] -> the layers' (unbiased) covariance at each feature [H, K, K]."""
    centred = x - x.mean(dim=0)  # [n, K, H]
    return torch.einsum("nkh,nlh->hkl", centred, centred) / max(x.shape[0] - 1, 1)


def mixed_std(layer_cov: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Standard deviation [H] of the mixed vectors sum_k p_k x_k, from layer_cov [H, K, K]: sqrt(p' C_h p),
    so a step of the mix weights never passes over the rows to standardise."""
    return torch.einsum("k,hkl,l->h", p, layer_cov, p).clamp(min=0).sqrt()


def fit_classification_mix(
    train: np.ndarray, labels: np.ndarray, *, strength: float = 1.0, max_iter: int = 40
) -> np.ndarray:
    """Learn ScalarMix weights [K] from per-layer vectors train [n, K, H] with a jointly trained probe.

    Only the K weights are kept: the sweep then scores the mixed vectors with the same batched
    probe as every other candidate (same C grid, same selection). The sweep passes a seeded
    sample of the training rows, which keeps this step cheap.
    """
    y = torch.as_tensor(labels, dtype=torch.long)
    return _fit_mix(train, logit_width(int(y.max()) + 1), lambda logits: logit_loss(logits, y), strength, max_iter)


def fit_target_mix(train: np.ndarray, targets: np.ndarray, *, strength: float = 1.0, max_iter: int = 40) -> np.ndarray:
    """ScalarMix weights [K] for a regression target [n] (squared error to the standardised target) or label sets
    [n, L] (binary cross-entropy per label), learned as fit_classification_mix learns them for classes."""
    if np.ndim(targets) == 2:
        y = torch.as_tensor(targets, dtype=torch.float32)  # [n, L]
        loss = lambda logits: torch.nn.functional.binary_cross_entropy_with_logits(logits, y)  # noqa: E731
        return _fit_mix(train, y.shape[1], loss, strength, max_iter)
    values = np.asarray(targets, dtype=np.float64)
    z = torch.as_tensor((values - values.mean()) / max(float(values.std()), 1e-12), dtype=torch.float32)[:, None]
    return _fit_mix(train, 1, lambda predicted: (predicted - z).pow(2).mean() / 2, strength, max_iter)


def _fit_mix(train: np.ndarray, outputs: int, loss_of, strength: float, max_iter: int) -> np.ndarray:
    """Mix weights and a linear probe on the standardised mix, trained jointly with L-BFGS; the weights [K]."""
    x = torch.from_numpy(np.ascontiguousarray(train))  # [n, K, H]
    n, layers, width = x.shape
    centred = (x - x.mean(dim=0)).permute(1, 0, 2).reshape(layers, n * width)  # [K, n*H]: the mix is one product
    layer_cov = layer_covariance(x)  # [H, K, K]
    mix = torch.zeros(layers, requires_grad=True)
    weight = torch.zeros(width, outputs, requires_grad=True)
    bias = torch.zeros(outputs, requires_grad=True)
    optimizer = torch.optim.LBFGS(
        [mix, weight, bias],
        lr=1,
        max_iter=max_iter,
        history_size=20,
        tolerance_grad=1e-6,
        tolerance_change=1e-10,
        line_search_fn="strong_wolfe",
    )

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        p = mix_probabilities(mix)  # [K]
        scale = mixed_std(layer_cov, p).clamp(min=1e-6)  # [H]
        z = (p @ centred).view(n, width) / scale  # [n, H] standardised, as the probe sees it
        logits = z @ weight + bias  # [n, outputs]
        loss = loss_of(logits) + weight.pow(2).sum() / (2 * strength * n)
        loss.backward()
        return loss

    optimizer.step(closure)
    return mix.detach().numpy().copy()


def fit_similarity_mix(
    u: np.ndarray, v: np.ndarray, scores: np.ndarray, *, steps: int = 300, seed: int = 0
) -> np.ndarray:
    """u, v [n, K, H] per-layer vectors of each pair side; returns mix weights [K].

    With p = softmax(w), mix(u).mix(v) = p^T G p where G[k, l] = u_k . v_l, so three Gram
    tensors [n, K, K] computed once make every optimisation step O(n K^2).
    """
    torch.manual_seed(seed)
    a, b = torch.from_numpy(u), torch.from_numpy(v)
    cross = torch.einsum("nkh,nlh->nkl", a, b)  # [n, K, K]
    self_a = torch.einsum("nkh,nlh->nkl", a, a)  # [n, K, K]
    self_b = torch.einsum("nkh,nlh->nkl", b, b)  # [n, K, K]
    target = torch.as_tensor(scores / max(float(np.max(scores)), 1e-9), dtype=torch.float32)
    mix = torch.zeros(a.shape[1], requires_grad=True)
    optimizer = torch.optim.Adam([mix], lr=0.05)

    def quadratic(gram: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        return torch.einsum("k,nkl,l->n", p, gram, p)  # [n]

    for _ in range(steps):
        optimizer.zero_grad()
        p = mix_probabilities(mix)
        cos = quadratic(cross, p) / (quadratic(self_a, p) * quadratic(self_b, p)).clamp(min=1e-12).sqrt()  # [n]
        loss = (cos - target).pow(2).mean()
        loss.backward()
        optimizer.step()
    return mix.detach().numpy().copy()
