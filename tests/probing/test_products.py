"""probing/products.py: x' y through (y' x)', the product every probe's x' y now takes."""

import numpy as np
import pytest
import torch

from bertlens.probing.products import SYRK_WIDTH, gram, transposed_product


@pytest.mark.parametrize("columns", [1, 3, 6, 28])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_transposed_product_is_x_transposed_times_y(columns, dtype):
    generator = torch.Generator().manual_seed(columns)
    x = torch.randn(2, 300, 40, generator=generator, dtype=dtype)  # [C, n, D]
    y = torch.randn(2, 300, columns, generator=generator, dtype=dtype)  # [C, n, K]
    got = transposed_product(x, y)
    assert got.shape == (2, 40, columns)
    want = np.einsum("cnd,cnk->cdk", x.double().numpy(), y.double().numpy())
    bound = 1e-4 if dtype == torch.float32 else 1e-10
    np.testing.assert_allclose(got.double().numpy(), want, rtol=bound, atol=bound)


def test_a_shared_target_matrix_serves_every_candidate():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3, 50, 8, generator=generator, dtype=torch.float64)  # [C, n, D]
    y = torch.randn(50, 4, generator=generator, dtype=torch.float64)  # [n, K]
    got = transposed_product(x, y)
    for c in range(3):
        torch.testing.assert_close(got[c], x[c].T @ y)


@pytest.mark.parametrize("width", [5, 1024, 1100])  # below and at SYRK_WIDTH: torch's product, then syrk's
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gram_is_x_transposed_times_x(width, dtype):
    generator = torch.Generator().manual_seed(width)
    x = torch.randn(2, 300, width, generator=generator, dtype=dtype) + 0.5  # [C, n, D], off-centre as features are
    got = gram(x)
    assert got.shape == (2, width, width) and got.dtype == dtype
    want = np.einsum("cnd,cne->cde", x.double().numpy(), x.double().numpy())
    bound = 1e-4 if dtype == torch.float32 else 1e-10
    np.testing.assert_allclose(got.double().numpy(), want, rtol=bound, atol=bound * 300)
    if width >= SYRK_WIDTH:
        assert torch.equal(got, got.mT)  # syrk's: both triangles, the mirrored half the computed one


def test_gram_through_syrk_keeps_to_torchs_threads():
    """syrk's BLAS runs on torch's thread count, so a process limited to one thread (a Ray task) stays on one."""
    from threadpoolctl import threadpool_info

    import bertlens.probing.products as products

    seen = []
    syrk = products.scipy.linalg.blas.ssyrk

    def watching(*args, **kwargs):
        seen.extend(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")
        return syrk(*args, **kwargs)

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        products.scipy.linalg.blas.ssyrk = watching
        gram(torch.randn(1, 50, products.SYRK_WIDTH))
    finally:
        products.scipy.linalg.blas.ssyrk = syrk
        torch.set_num_threads(before)
    assert seen and set(seen) == {1}
