"""The logistic probe's C grid fitted jointly from zero vs along the warm-started path, per number of classes.

Usage: python bench/logistic_path.py [--texts 10000] [--classes 8,16,32,64,100] [--sklearn]

Features: mean pooling of layers 3-6 concatenated (1536 wide, the contender of bench/many_classes.py)
and of layer 6 alone (384 wide), default model, on the cloze task of bench/many_classes_data.py
restricted to its K most frequent classes; fold 0 of a stratified 10-fold CV (as the sweep's).
For each K and width: time of each fit (after a warm-up, torch threads as set), the objective
(scikit-learn's, divided by n) at every C, and dev / test accuracy at every C. `--sklearn` adds
scikit-learn's LogisticRegression (lbfgs, max_iter=1000) at every C on the 384-wide features,
the fits both are meant to reach.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

from bertlens.encoding.encoder import Encoder
from bertlens.features.bank import build_bank
from bertlens.probing.logistic import C_GRID, LogisticFit, fit_logistic
from bertlens.tasks.splits import make_folds
from common import DATA, lscpu_summary, timed
from many_classes_data import cloze_task


def objective(fit: LogisticFit, x: torch.Tensor, y: np.ndarray, r: int) -> float:
    """scikit-learn's multinomial objective / n at the fit's r-th strength (x [1, n, D] raw features)."""
    logits = fit.decision(x)[0, r].double()  # [n, K]
    k = fit.outputs
    weight = fit.weight[0, :, r * k : (r + 1) * k].double()  # [D, K]
    loss = torch.nn.functional.cross_entropy(logits, torch.as_tensor(y))
    return float(loss + weight.pow(2).sum() / (2 * fit.strengths[r] * len(y)))


def _row(label: str, fit: str, seconds: str, objectives: list, dev: list, test: list) -> None:
    """One markdown row: objectives to 4 places, accuracies to 3, each list joined by ' / '."""
    cells = (
        " / ".join(f"{v:{spec}}" for v in values) for values, spec in ((objectives, ".4f"), (dev, ".3f"), (test, ".3f"))
    )
    print(f"| {label} | {fit} | {seconds} | " + " | ".join(cells) + " |")


def compare(x: np.ndarray, y: np.ndarray, label: str, with_sklearn: bool) -> None:
    fold = make_folds({"all": np.arange(len(y))}, y, stratify=True, cv_folds=10, seed=0)[0]
    train, dev, test = (torch.from_numpy(x[rows][None]) for rows in (fold.train, fold.dev, fold.test))
    y_train, y_dev, y_test = y[fold.train], y[fold.dev], y[fold.test]
    for warm_path in (False, True):
        fit_logistic(train[:, :300], y_train[:300], C_GRID, warm_path=warm_path)  # warm-up: first-call costs
    for warm_path in (False, True):
        fit, seconds = timed(lambda path=warm_path: fit_logistic(train, y_train, C_GRID, warm_path=path))
        dev_acc = (fit.predict(dev)[0].numpy() == y_dev).mean(-1)
        test_acc = (fit.predict(test)[0].numpy() == y_test).mean(-1)
        objectives = [objective(fit, train, y_train, r) for r in range(len(C_GRID))]
        _row(label, "path" if warm_path else "joint", f"{seconds:.2f}", objectives, dev_acc, test_acc)
    if with_sklearn and x.shape[1] <= 384:
        mean, std = x[fold.train].mean(0), np.maximum(x[fold.train].std(0, ddof=1), 1e-6)
        dev_acc, test_acc = [], []
        for c in C_GRID:
            model = LogisticRegression(C=c, max_iter=1000).fit((x[fold.train] - mean) / std, y_train)
            dev_acc.append((model.predict((x[fold.dev] - mean) / std) == y_dev).mean())
            test_acc.append((model.predict((x[fold.test] - mean) / std) == y_test).mean())
        _row(label, "scikit-learn", "", [], dev_acc, test_acc)


def cloze_features(texts: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The cloze task's features by width ("384": layer 6's mean, "1536": layers 3-6's concatenated; default model)
    and its class ids; prints what was encoded."""
    rows = cloze_task(DATA, texts)
    names = sorted({label for _, label in rows})
    labels = np.array([names.index(label) for _, label in rows])
    print(f"cloze task: {len(rows)} texts; default model; torch threads {torch.get_num_threads()}; {lscpu_summary()}")
    with tempfile.TemporaryDirectory() as tmp:
        bank = build_bank(Encoder("default", attentions="cls"), [text for text, _ in rows], Path(tmp))
        layers = {k: np.asarray(bank.layer("mean", k), dtype=np.float32) for k in (3, 4, 5, 6)}
    return {"384": layers[6], "1536": np.concatenate([layers[k] for k in (3, 4, 5, 6)], axis=1)}, labels


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=10000)
    parser.add_argument("--classes", default="8,16,32,64,100")
    parser.add_argument("--sklearn", action="store_true")
    args = parser.parse_args()
    widths, labels = cloze_features(args.texts)
    print("| classes, width | fit | seconds | objective at C = 0.01 / 0.1 / 1 / 10 | dev accuracy | test accuracy |")
    print("|---|---|---|---|---|---|")
    frequent = np.argsort(-np.bincount(labels), kind="stable")
    for classes in (int(k) for k in args.classes.split(",")):
        keep = np.isin(labels, frequent[:classes])
        y = np.unique(labels[keep], return_inverse=True)[1]
        for width, x in widths.items():
            compare(
                x[keep], y, f"{classes}, {width}", args.sklearn and classes == max(map(int, args.classes.split(",")))
            )


if __name__ == "__main__":
    main()
