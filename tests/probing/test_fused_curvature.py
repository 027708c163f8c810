"""The one-pass kernels of probing/fused_curvature.py against torch's products, and the label sets' solve with them."""

import numpy as np
import pytest
import torch

from bertlens.probing import fused_curvature, logistic, newton_cg
from bertlens.probing.fused_curvature import applies, describe, fused_curvature_product
from bertlens.probing.logistic import fit_logistic

pytest.importorskip("numba")


def _problem(count: int, rows: int, width: int, columns: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(count, rows, width, generator=generator)  # [C, n, D]
    coef = torch.randn(count, width, columns, generator=generator) / width**0.5  # [C, D, M]
    bias = torch.randn(count, 1, columns, generator=generator)  # [C, 1, M]
    curvature = torch.rand(count, rows, columns, generator=generator) / rows  # [C, n, M]
    return x, coef, bias, curvature


@pytest.mark.parametrize("rows", [1, 3, 4, 1003])  # fewer rows than a block, an exact block, a ragged end
@pytest.mark.parametrize("columns", [1, 3, 8, 29])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_fused_product_equals_torchs_two_products(rows, columns, threads, monkeypatch):
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
    x, coef, bias, curvature = _problem(2, rows, 37, columns)
    back, sums, values = fused_curvature_product(x, coef, bias, curvature)
    exact = torch.bmm(x.double(), coef.double()) + bias.double()  # [C, n, M]
    weighted = curvature.double() * exact  # [C, n, M]
    assert back.shape == (2, 37, columns) and sums.shape == (2, 1, columns) and values.shape == (2, rows, columns)
    assert float((values.double() - exact).abs().max()) <= 1e-5 * float(exact.abs().max())  # x coef + b, each row
    scale = float(weighted.abs().sum())
    assert float((back.double() - torch.bmm(x.double().mT, weighted)).abs().max()) <= 1e-6 * scale
    assert float((sums.double() - weighted.sum(dim=1, keepdim=True)).abs().max()) <= 1e-6 * scale


def test_the_same_threads_give_the_same_figures():
    x, coef, bias, curvature = _problem(1, 2001, 64, 6)
    first, second = fused_curvature_product(x, coef, bias, curvature), fused_curvature_product(x, coef, bias, curvature)
    assert all(torch.equal(one, other) for one, other in zip(first, second, strict=True))


def test_it_applies_to_contiguous_float32_features_on_the_cpu_only():
    x = torch.zeros(2, 8, 4)
    assert applies(x)
    assert not applies(x.double()) and not applies(x.bfloat16()) and not applies(x.transpose(1, 2))


def test_without_numba_the_report_says_how_to_get_it(monkeypatch):
    assert "fused in one pass" in describe("cpu")
    monkeypatch.setattr(fused_curvature, "available", lambda: False)
    assert not applies(torch.zeros(1, 4, 4))
    assert "pip install 'bertlens[fast-probes]'" in describe("cpu")
    assert describe("cuda") == "the label sets' curvature products by torch on the device"


def test_a_label_set_fit_ends_where_torchs_products_end_it(monkeypatch):
    """The kernels change only the sums' order: every column still stops at a float32 gradient within tol, so the
    probabilities match the torch products' fit far inside the 1e-3 a sweep's rows may move."""
    generator = np.random.default_rng(3)
    features = torch.from_numpy(generator.standard_normal((1, 600, 24)).astype(np.float32))  # [1, n, D]
    signal = features[0, :, :3].numpy()
    labels = (signal + 0.8 * generator.standard_normal((600, 3)) > [0.0, 1.0, 1.8]).astype(np.int64)  # [n, 3], rare
    monkeypatch.setattr(logistic, "product_dtype", lambda device: torch.float32)  # as on a CPU without native bf16
    calls = []
    monkeypatch.setattr(newton_cg, "fused_curvature_product", lambda *a: calls.append(1) or fused_curvature_product(*a))
    fused = fit_logistic(features, labels, strengths=(0.1, 10.0))
    assert calls  # the kernel served the curvature products
    monkeypatch.setattr(newton_cg, "applies", lambda x: False)
    plain = fit_logistic(features, labels, strengths=(0.1, 10.0))
    assert torch.sigmoid(fused.decision(features)).sub(torch.sigmoid(plain.decision(features))).abs().max() < 1e-4
