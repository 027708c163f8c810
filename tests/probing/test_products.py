"""probing/products.py: x' y through (y' x)', the product every probe's x' y now takes."""

import numpy as np
import pytest
import torch

from bertlens.probing.products import transposed_product


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
