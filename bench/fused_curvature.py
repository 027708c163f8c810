"""The label sets' curvature product: torch's two products against the fused kernel (probing/fused_curvature.py).

    python bench/fused_curvature.py [--rows 43000] [--width 1536,384]

Prints, per width and number of columns, the milliseconds of each and the ratio, on this machine's cores (run it
alone: a second job on 2 cores skews the ratio).
"""

from __future__ import annotations

import argparse
import time

import torch

from bertlens.probing.fused_curvature import available, fused_curvature_product
from bertlens.probing.products import transposed_product
from common import best_of, lscpu_summary


def torch_pair(x, coef, bias, curvature):
    weighted = curvature * (torch.bmm(x, coef) + bias)  # [C, n, M]
    return transposed_product(x, weighted), weighted.sum(dim=1, keepdim=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=43_000)
    parser.add_argument("--width", default="1536,384")
    parser.add_argument("--columns", default="1,2,4,8,16,28,56,84")
    args = parser.parse_args()
    if not available():
        raise SystemExit("bench/fused_curvature.py: numba is not installed: pip install 'bertlens[fast-probes]'")
    print(lscpu_summary(), f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    start = time.perf_counter()
    fused_curvature_product(torch.zeros(1, 4, 4), torch.zeros(1, 4, 1), torch.zeros(1, 1, 1), torch.zeros(1, 4, 1))
    print(f"the first call (numba compiles the kernel) took {time.perf_counter() - start:.2f} s")
    generator = torch.Generator().manual_seed(0)
    print("| rows x width | columns | torch, ms | fused, ms | torch / fused | largest relative difference |")
    print("|---|---|---|---|---|---|")
    for width in (int(w) for w in args.width.split(",")):
        x = torch.randn(1, args.rows, width, generator=generator)  # [1, n, D]
        for columns in (int(m) for m in args.columns.split(",")):
            coef = torch.randn(1, width, columns, generator=generator) / width**0.5  # [1, D, M]
            bias = torch.randn(1, 1, columns, generator=generator)  # [1, 1, M]
            curvature = torch.rand(1, args.rows, columns, generator=generator) / args.rows  # [1, n, M]
            inputs = (x, coef, bias, curvature)
            ours, theirs = fused_curvature_product(*inputs), torch_pair(*inputs)
            apart = float((ours[0] - theirs[0]).abs().max() / theirs[0].abs().max())
            slow = best_of(lambda inputs=inputs: torch_pair(*inputs), 5)
            fast = best_of(lambda inputs=inputs: fused_curvature_product(*inputs), 5)
            print(f"| {args.rows:,} x {width} | {columns} | {slow * 1e3:.1f} | {fast * 1e3:.1f} | "
                  f"{slow / fast:.2f}x | {apart:.1e} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
