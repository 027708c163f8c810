"""Where probes train, choose and score: one way to carve a dev split, one way to make folds.

Every command that needs a dev split it was not given (sweep, compare, finetune, longdoc) calls
`carve_dev` with the task's seed, so for the same task and seed they choose on the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

DEV_FRACTION = 0.1


@dataclass(frozen=True)
class Fold:
    """Row indices: fit on train, choose on dev, score on test (held out from both)."""

    train: np.ndarray
    dev: np.ndarray
    test: np.ndarray


def carve_dev(
    rows: np.ndarray, targets: np.ndarray, seed: int, stratify: bool, fraction: float = DEV_FRACTION
) -> tuple[np.ndarray, np.ndarray]:
    """(train, dev) sorted row indices: a seeded `fraction` of `rows` (stratified by class when asked)."""
    train, dev = train_test_split(
        rows, test_size=fraction, random_state=seed, stratify=targets[rows] if stratify else None
    )
    return np.sort(train), np.sort(dev)


def make_folds(
    where: dict[str, np.ndarray],
    targets: np.ndarray,
    *,
    stratify: bool,
    cv_folds: int | None,
    seed: int,
    dev_fraction: float = DEV_FRACTION,
) -> list[Fold]:
    """train/dev/test as given (a seeded dev carved from train when missing); k-fold CV over 'all' otherwise.

    Under cross-validation each fold's dev split is carved from that fold's training rows only,
    so nothing chosen on it has seen the fold's test rows.
    """
    if cv_folds is None:
        train, dev = where["train"], where.get("dev")
        if dev is None:
            train, dev = carve_dev(train, targets, seed, stratify, dev_fraction)
        return [Fold(train, dev, where["test"])]
    rows = where["all"]
    splitter = (StratifiedKFold if stratify else KFold)(n_splits=cv_folds, shuffle=True, random_state=seed)
    folds = []
    for train, test in splitter.split(rows, targets[rows] if stratify else None):
        inner_train, inner_dev = carve_dev(rows[train], targets, seed, stratify, dev_fraction)
        folds.append(Fold(inner_train, inner_dev, rows[test]))
    return folds
