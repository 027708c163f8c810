"""x' x of probe features: torch's batched product against probing/products.py's gram (BLAS syrk from SYRK_WIDTH).

Usage: python bench/gram.py [--rows 43284] [--widths 384,768,1024,1152,1536] [--candidates 1] [--repeats 3]

Issue #75, eleventh part. The ridge screen's sufficient statistics (probing/fold_ridge.py) and the logistic probes'
whitening (probing/logistic.py) each take a Gram matrix per candidate; syrk computes one triangle, half the
arithmetic. Prints the best of --repeats seconds of both by width, their ratio (torch / gram: above 1, gram is
faster) and each one's largest difference from float64, relative to the largest entry; on all of torch's threads.
"""

from __future__ import annotations

import argparse

import torch

from bertlens.probing.products import SYRK_WIDTH, gram
from common import best_of, lscpu_summary


def relative_error(got: torch.Tensor, exact: torch.Tensor) -> float:
    return float((got.double() - exact).abs().max() / exact.abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=43284)  # GoEmotions' training comments
    parser.add_argument("--widths", default="384,768,1024,1152,1536")
    parser.add_argument("--candidates", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    print(lscpu_summary())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.candidates} candidate(s) x {args.rows} rows;"
          f" syrk from {SYRK_WIDTH} wide")  # fmt: skip
    print("| width | torch.bmm(x.mT, x), s | gram, s | torch / gram | error torch | error gram |")
    print("|---|---|---|---|---|---|")
    for width in (int(w) for w in args.widths.split(",")):
        x = torch.randn(args.candidates, args.rows, width) + 0.5  # [C, n, D], off-centre as pooled features are
        exact = torch.bmm(x.double().mT, x.double())  # [C, D, D]
        ours = best_of(lambda: gram(x), args.repeats)  # noqa: B023
        theirs = best_of(lambda: torch.bmm(x.mT, x), args.repeats)  # noqa: B023
        errors = relative_error(torch.bmm(x.mT, x), exact), relative_error(gram(x), exact)
        print(f"| {width} | {theirs:.3f} | {ours:.3f} | {theirs / ours:.2f}x | {errors[0]:.1e} | {errors[1]:.1e} |")


if __name__ == "__main__":
    main()
