"""The softmax probes' L-BFGS: torch.optim.LBFGS's closure (two products over the rows at every trial step), the
line search along the logits (probing/logit_lbfgs.py: two products an iteration) and the same with the Kronecker
curvature as first guess, stopped at the predicted decrease (probing/kronecker.py: the path's default since #75's
fourteenth part), in the sweep's own fit.

Usage: python bench/logit_lbfgs.py [--texts 20000] [--widths 384,1536]

Features as bench/logistic_path.py's: the 100-class cloze task (bench/many_classes_data.py) at --texts texts,
default model, mean pooling of layer 6 (384 wide) and of layers 3-6 concatenated (1536 wide, the 100k cloze's pick);
fold 0 of a stratified 10-fold CV. Each width's fit is the sweep's (fit_logistic over the C grid along the path,
searched on dev), once with each L-BFGS, torch's first, after a warm-up; then the reference all of them approach: each
strength solved to its optimum in float64 (the Kronecker guess, no step cap, a gradient of 1e-9). Prints per width:
seconds and the ratio to torch's, products over the rows, evaluations and iterations, dev accuracy at each fitted C,
the objective above the optimum's (largest over the fitted C), the share of test predictions that differ from the
optimum's and the largest difference in test probability.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from bertlens.probing import logistic
from bertlens.probing.kronecker import softmax_curvature
from bertlens.probing.logistic import C_GRID, PATH_DECREASE_TOL, dev_accuracy_search, fit_logistic
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
        """A _Whitened.minimise with torch's L-BFGS ("torch"), the logits' ("logits"), the logits' with the Kronecker
        guess stopped at the predicted decrease ("kronecker") or run to the optimum ("optimum"), counting as it
        goes; the path's own choice (`kronecker=`) is overridden."""

        def solve(problem, coef, bias, per_strength, max_iter, kronecker=False):
            objective = problem.objective(per_strength)
            curvature = lambda slope: softmax_curvature(slope, problem.y, objective.penalty)  # noqa: E731
            evaluations = 0  # the logits' trial steps cost no product: only their products are compared
            with torch.no_grad():
                if which == "torch":
                    iterations, evaluations = torch_lbfgs(objective, coef, bias, max_iter, problem.tol)
                elif which == "logits":
                    iterations = minimise(objective, coef, bias, max_iter, problem.tol)
                elif which == "kronecker":
                    iterations = minimise(objective, coef, bias, max_iter, problem.tol, curvature, PATH_DECREASE_TOL)
                else:
                    iterations = minimise(objective, coef, bias, 2000, 1e-9, curvature)
            self.iterations += iterations
            self.evaluations += evaluations

        return solve


def objective_gap(fit, optimum, train, y_train) -> float:
    """The largest, over the C both fitted, of scikit-learn's objective divided by n above the optimum's."""

    def value(f, r: int) -> float:
        logits = f.decision(train)[0, r].double()  # [n, K]
        weight = f.weight[0, :, r * f.outputs : (r + 1) * f.outputs].double()
        penalty = (weight**2).sum() / (2 * f.strengths[r] * len(y_train))
        return float(torch.nn.functional.cross_entropy(logits, torch.as_tensor(y_train)) + penalty)

    both = np.flatnonzero(fit.fitted_mask() & optimum.fitted_mask())
    return max(value(fit, r) - value(optimum, r) for r in both)


def run(which: str, counter: Counted, train, y_train, dev, y_dev, test):
    logistic._Whitened.minimise = counter.solver(which)
    counter.products = counter.iterations = counter.evaluations = 0
    dtype = torch.float64 if which == "optimum" else None
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
          " objective above the optimum's | test predictions apart from the optimum's |"
          " test probability apart from the optimum's |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for width in args.widths.split(","):
        x = widths[width]
        fold = make_folds({"all": np.arange(len(labels))}, labels, stratify=True, cv_folds=10, seed=0)[0]
        train, dev, test = (torch.from_numpy(x[rows][None]) for rows in (fold.train, fold.dev, fold.test))
        y_train, y_dev = labels[fold.train], labels[fold.dev]
        fit_logistic(train[:, :500], y_train[:500], C_GRID)  # warm-up: first-call costs
        results = {
            w: run(w, counter, train, y_train, dev, y_dev, test) for w in ("torch", "logits", "kronecker", "optimum")
        }
        base, reference = results["torch"], results["optimum"]
        for which, (fit, seconds, (products, iterations, evaluations), dev_accuracy, probabilities) in results.items():
            fitted = fit.fitted_mask() & reference[0].fitted_mask()
            apart = (probabilities.argmax(-1) != reference[4].argmax(-1))[fitted].double().mean().item()
            largest = (probabilities - reference[4].float())[fitted].abs().max().item()
            shown = str(evaluations) if which == "torch" else ""  # the logits' trial steps cost no product
            accuracy = " / ".join(f"{a:.4f}" for a in dev_accuracy[fitted])
            gap = objective_gap(fit, reference[0], train, y_train)
            print(f"| {width} | {which} | {seconds:.1f} | {base[1] / seconds:.2f} | {products} | {iterations} | "
                  f"{shown} | {accuracy} | {gap:.1e} | {apart:.4%} | {largest:.1e} |")  # fmt: skip


if __name__ == "__main__":
    main()
