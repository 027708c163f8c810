"""The label sets' curvature product x' (c * (x v + b)) in one pass over x, compiled by numba where it is installed.

Why: a label-set solve spends nearly all its time in these products (probing/newton_cg.py), and most of its
conjugate-gradient steps carry only the few rare labels still unsolved (1 to 8 columns). There torch's two products,
x v and then x' w, run far below the machine's speed: each reads all of x (43,000 x 1536 float32 is 264 MB) for a
few columns of arithmetic, and MKL's kernels for so few columns reach a third to a half of the memory's bandwidth.
Here each block of four rows is read once, from cache, for both products: measured on an AMD EPYC (AVX2, 2 cores)
at 43,000 x 1536, 2.6x faster at 1 column, 6.1x at 2, 5.1x at 4, 3.2x at 8, 1.7x at 16, 1.4x at 28 and 1.04x at 56
(`python bench/fused_curvature.py`; docs/results.md). The sums run in another order than torch's (float32 rounding,
1e-6 relative); only the conjugate gradients' direction comes from this product (the gradient, line search and stop
do not).

Used for float32 features on a CPU (`applies`); elsewhere (a GPU, the bfloat16 copy of a CPU with native bfloat16,
float64 reference fits, numba not installed) the torch products run as before. `pip install 'bertlens[fast-probes]'`
installs numba; the report's protocol line says which ran (`describe`).
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from bertlens.extras import has_extra

ROWS = 4  # rows read together: each of v's and the sums' values loaded once serves four rows' multiply-adds
EXTRA = "fast-probes"
FUSED_COLUMNS = 56  # the kernel serves products of up to this many columns: torch's two products catch up at 56-84
# (1.04-1.15x at 56, 0.75-0.99x at 84 and 112: bench/fused_curvature.py, AMD EPYC with AVX2, 43,000 rows; at 4,000 x
# 384 the 56 columns took 5.2 against 3.6 ms, a loss of milliseconds where a solve's products are cheap anyway)


@functools.cache
def available() -> bool:
    """Whether numba can be imported here (found without importing it: the import costs half a second)."""
    return has_extra(EXTRA)


def applies(x: torch.Tensor) -> bool:
    """Whether `fused_curvature_product` serves features x [C, n, D]: float32, contiguous, on the CPU, numba here."""
    return x.device.type == "cpu" and x.dtype == torch.float32 and x.is_contiguous() and available()


def describe(device: torch.device | str = "cpu") -> str:
    """One phrase for a report: how the label sets' curvature products run on `device`."""
    if torch.device(device).type != "cpu":
        return "the label sets' curvature products by torch on the device"
    if available():
        return "the label sets' curvature products fused in one pass over the features (numba)"
    return (
        "the label sets' curvature products by torch (numba is not installed: "
        f"pip install 'bertlens[{EXTRA}]' runs them up to 6x faster on a CPU)"
    )


@functools.cache
def _kernel():
    """The compiled kernel (numba compiles it on first use, about a second; nothing is cached on disk)."""
    import numba

    @numba.njit(nogil=True, fastmath={"reassoc", "contract"})
    def rows_product(x, vt, b, curv, start, stop, total, sums, values):  # pragma: no cover - compiled
        """total [M, D] = sum over rows i in [start, stop) of w_i x_i', w_ij = curv_ij values_ij, where values_ij =
        x_i . vt_j + b_j is written too; sums [M] = the w's column sums. x [n, D], vt [M, D], b [M], curv and values
        [n, M], all float32."""
        width = x.shape[1]
        columns = vt.shape[0]
        total[:] = 0
        sums[:] = 0
        w = np.empty((4, columns), dtype=np.float32)
        i = start
        while i + 4 <= stop:  # four rows at a time: v's and total's values are loaded once for four rows
            x0, x1, x2, x3 = x[i], x[i + 1], x[i + 2], x[i + 3]
            for j in range(columns):
                v = vt[j]
                s0 = s1 = s2 = s3 = np.float32(0)
                for d in range(width):
                    s0 += x0[d] * v[d]
                    s1 += x1[d] * v[d]
                    s2 += x2[d] * v[d]
                    s3 += x3[d] * v[d]
                e0, e1, e2, e3 = s0 + b[j], s1 + b[j], s2 + b[j], s3 + b[j]
                values[i, j], values[i + 1, j], values[i + 2, j], values[i + 3, j] = e0, e1, e2, e3
                w[0, j] = curv[i, j] * e0
                w[1, j] = curv[i + 1, j] * e1
                w[2, j] = curv[i + 2, j] * e2
                w[3, j] = curv[i + 3, j] * e3
            for j in range(columns):
                w0, w1, w2, w3 = w[0, j], w[1, j], w[2, j], w[3, j]
                sums[j] += w0 + w1 + w2 + w3
                row = total[j]
                for d in range(width):
                    row[d] += w0 * x0[d] + w1 * x1[d] + w2 * x2[d] + w3 * x3[d]
            i += 4
        while i < stop:  # the last rows, one at a time
            xi = x[i]
            for j in range(columns):
                v = vt[j]
                s = np.float32(0)
                for d in range(width):
                    s += xi[d] * v[d]
                e = s + b[j]
                values[i, j] = e
                wij = curv[i, j] * e
                sums[j] += wij
                row = total[j]
                for d in range(width):
                    row[d] += wij * xi[d]
            i += 1

    return rows_product


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="bertlens-curvature")


def _parts(rows: int, threads: int) -> list[tuple[int, int]]:
    """Row ranges, one a thread, each a multiple of ROWS long but the last."""
    size = -(-rows // threads)
    size = -(-size // ROWS) * ROWS
    return [(start, min(rows, start + size)) for start in range(0, rows, size)]


def fused_curvature_product(
    x: torch.Tensor, coef: torch.Tensor, bias: torch.Tensor, curvature: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x' (curvature * (x coef + bias)) [C, D, M], the weighted values' column sums [C, 1, M] and the values x coef +
    bias [C, n, M] themselves, as torch computes them with two products: x [C, n, D], coef [C, D, M], bias [C, 1, M],
    curvature [C, n, M] (float32, CPU). The values come with the pass (written, not recomputed): a label-set solve
    sums them into its step's x d, so that its line search needs no product of its own (probing/newton_cg.py).

    The rows are split among torch's threads (inside map_on_cores' jobs, one thread each: one part); each part's
    sums are added in a fixed order, so the same threads give the same figures."""
    count, rows, width = x.shape
    columns = coef.shape[-1]
    kernel = _kernel()
    xs = x.detach().numpy()  # [C, n, D]: a view
    vt = coef.detach().transpose(1, 2).contiguous().numpy()  # [C, M, D]
    b = bias.detach()[:, 0, :].contiguous().numpy()  # [C, M]
    curv = curvature.detach().contiguous().numpy()  # [C, n, M]
    parts = _parts(rows, max(1, torch.get_num_threads()))
    totals = np.empty((count, len(parts), columns, width), dtype=np.float32)  # [C, P, M, D]
    sums = np.empty((count, len(parts), columns), dtype=np.float32)  # [C, P, M]
    values = np.empty((count, rows, columns), dtype=np.float32)  # [C, n, M]: each part writes its own rows
    jobs = [(c, p, start, stop) for c in range(count) for p, (start, stop) in enumerate(parts)]

    def run(job: tuple[int, int, int, int]) -> None:
        c, p, start, stop = job
        kernel(xs[c], vt[c], b[c], curv[c], start, stop, totals[c, p], sums[c, p], values[c])

    if len(parts) == 1:
        for job in jobs:
            run(job)
    else:
        list(_pool().map(run, jobs))
    back = torch.from_numpy(totals.sum(axis=1)).transpose(1, 2)  # [C, D, M]
    return back, torch.from_numpy(sums.sum(axis=1))[:, None, :], torch.from_numpy(values)  # [C, 1, M], [C, n, M]
