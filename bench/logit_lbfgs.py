"""The softmax probes' L-BFGS: torch.optim.LBFGS's closure (two products over the rows at every trial step) against
probing/logit_lbfgs.py (the line search along the logits: two products an iteration), in the sweep's own fit.

Usage: python bench/logit_lbfgs.py [--texts 20000] [--widths 384,1536]

Features as bench/logistic_path.py's: the 100-class cloze task (bench/many_classes_data.py) at --texts texts,
default model, mean pooling of layer 6 (384 wide) and of layers 3-6 concatenated (1536 wide, the 100k cloze's pick);
fold 0 of a stratified 10-fold CV. Each width's fit is the sweep's (fit_logistic over the C grid along the path,
searched on dev), once with each L-BFGS, torch's first, after a warm-up, then the logits' in float64 (the reference
both follow: in float64 their rows are equal). Prints per width: seconds and the ratio, products over the rows,
evaluations and iterations, dev accuracy at each fitted C, the share of test predictions that differ from float64's and
the largest difference in test probability from float64's.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from bertlens.probing import logistic
from bertlens.probing.logistic import C_GRID, dev_accuracy_search, fit_logistic
from bertlens.probing.logit_lbfgs import LinearObjective, minimise, torch_lbfgs
from bertlens.tasks.splits import make_folds
from common import timed
from logistic_path import cloze_features


class Counted:
    """Counts the objective's products over the rows and the L-BFGS runs' iterations and evaluations."""

    def __init__(self) -> None:
        self.products = self.iterations = self.evaluations = 0
        product, gradient = LinearObjective.product, LinearObjective.gradient

        def counted_product(objective, *args):
            self.products += 1
            return product(objective, *args)

        def counted_gradient(objective, *args):
            self.products += 1
            return gradient(objective, *args)

        LinearObjective.product, LinearObjective.gradient = counted_product, counted_gradient

    def solver(self, which: str):
        """A _Whitened.minimise with torch's L-BFGS ("torch") or the logits' ("logits"), counting as it goes."""

        def solve(problem, coef, bias, per_strength, max_iter):
            with torch.no_grad():
                if which == "torch":
                    iterations, evaluations = torch_lbfgs(
                        problem.objective(per_strength), coef, bias, max_iter, problem.tol
                    )
                else:  # its trial steps cost no product: only its products are compared
                    iterations, evaluations = (
                        minimise(problem.objective(per_strength), coef, bias, max_iter, problem.tol),
                        0,
                    )
            self.iterations += iterations
            self.evaluations += evaluations

        return solve


def run(which: str, counter: Counted, train, y_train, dev, y_dev, test):
    logistic._Whitened.minimise = counter.solver("logits" if which == "float64" else which)
    counter.products = counter.iterations = counter.evaluations = 0
    dtype = torch.float64 if which == "float64" else None
    fit, seconds = timed(
        lambda: fit_logistic(train, y_train, C_GRID, dev=dev_accuracy_search(dev, y_dev), compute_dtype=dtype)
    )
    dev_accuracy = (fit.predict(dev)[0].numpy() == y_dev).mean(-1)  # [R]
    probabilities = torch.softmax(fit.decision(test)[0], dim=-1)  # [R, n, K]
    return fit, seconds, (counter.products, counter.iterations, counter.evaluations), dev_accuracy, probabilities


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=20000)
    parser.add_argument("--widths", default="384,1536")
    args = parser.parse_args()
    widths, labels = cloze_features(args.texts)
    counter = Counted()
    print("| width | L-BFGS | seconds | x torch's | products | iterations | evaluations | dev accuracy at C fitted |"
          " test predictions apart from float64's | test probability apart from float64's |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for width in args.widths.split(","):
        x = widths[width]
        fold = make_folds({"all": np.arange(len(labels))}, labels, stratify=True, cv_folds=10, seed=0)[0]
        train, dev, test = (torch.from_numpy(x[rows][None]) for rows in (fold.train, fold.dev, fold.test))
        y_train, y_dev = labels[fold.train], labels[fold.dev]
        fit_logistic(train[:, :500], y_train[:500], C_GRID)  # warm-up: first-call costs
        results = {w: run(w, counter, train, y_train, dev, y_dev, test) for w in ("torch", "logits", "float64")}
        base, reference = results["torch"], results["float64"]
        for which, (fit, seconds, (products, iterations, evaluations), dev_accuracy, probabilities) in results.items():
            fitted = fit.fitted_mask() & reference[0].fitted_mask()
            apart = (probabilities.argmax(-1) != reference[4].argmax(-1))[fitted].double().mean().item()
            largest = (probabilities - reference[4].float())[fitted].abs().max().item()
            shown = str(evaluations) if which == "torch" else ""  # the logits' trial steps cost no product
            accuracy = " / ".join(f"{a:.4f}" for a in dev_accuracy[fitted])
            print(f"| {width} | {which} | {seconds:.1f} | {base[1] / seconds:.2f} | {products} | {iterations} | "
                  f"{shown} | {accuracy} | {apart:.4%} | {largest:.1e} |")  # fmt: skip


if __name__ == "__main__":
    main()
