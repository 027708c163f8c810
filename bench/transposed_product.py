"""x' y with x stored [n, D] and a few columns in y: torch's product through a transposed view against (y' x)'.

Usage: python bench/transposed_product.py [--rows 43000] [--width 1536] [--repeats 3]

Issue #75, ninth part. The label sets' Newton-CG (probing/newton_cg.py) computed x' y from a transposed view of the
whitened features, and the ridge screen and its dual form did the same (probing/fold_ridge.py); on an AMD EPYC with
AVX2 only, that product ran 5-40x slower than (y' x)' when y had 2 to about 11 columns, which the solves of rare labels
and the tasks with few classes or targets reach. Prints GFLOP/s of both forms by number of columns and their ratio
(probing/products.py's form is the baseline's numerator), in float32 and float64, on all cores.
"""

from __future__ import annotations

import argparse
import time

import torch

from bertlens.probing.products import transposed_product


def rate(fn, flop: float, repeats: int) -> float:
    fn()  # warm
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return flop * repeats / (time.perf_counter() - start) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=43000)
    parser.add_argument("--width", type=int, default=1536)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; x [{args.rows}, {args.width}]")
    print("| dtype | columns | torch.bmm(x.mT, y), GFLOP/s | transposed_product, GFLOP/s | ratio |")
    print("|---|---|---|---|---|")
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(1, args.rows, args.width, dtype=dtype)  # [1, n, D]
        for columns in (1, 2, 3, 4, 6, 8, 11, 16, 28, 56):
            y = torch.randn(1, args.rows, columns, dtype=dtype)  # [1, n, K]
            flop = 2.0 * args.rows * args.width * columns
            view = rate(lambda: torch.bmm(x.mT, y), flop, args.repeats)  # noqa: B023
            ours = rate(lambda: transposed_product(x, y), flop, args.repeats)  # noqa: B023
            name = str(dtype).removeprefix("torch.")
            print(f"| {name} | {columns} | {view:.1f} | {ours:.1f} | {ours / view:.2f}x |")


if __name__ == "__main__":
    main()
