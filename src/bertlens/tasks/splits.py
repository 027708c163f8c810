"""Where rows are held out: the one module that carves dev, test and held-out rows, and makes folds.

Every command that needs rows it was not given (a dev split for choosing, a test split for scoring,
held-out texts for a fidelity check, training subsets for a learning curve) calls this module with the
task's seed, so for the same task and seed they all use the same rows:
- `carve_dev`: the one seeded hold-out (stratified by class when asked), for dev, test and held-out rows;
- `make_folds`: k-fold cross-validation, with each fold's dev carved from its own training rows;
- `task_splits`: train/dev/test of a task, a dev carved from train where the task has none;
- `training_subset` / `resolve_sizes`: nested training subsets for learning curves;
- `hold_out_block`: a contiguous block of a packed token stream (masked-LM pre-training), where a random
  sample of rows would hold out pieces of documents whose neighbouring rows are trained on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

from bertlens.errors import BertlensError, OptionError, literal
from bertlens.tasks.kinds import TaskKind
from bertlens.tasks.loaders import Split, TaskData

DEV_FRACTION = 0.1


@dataclass(frozen=True)
class Fold:
    """Row indices: fit on train, choose on dev, score on test (held out from both)."""

    train: np.ndarray
    dev: np.ndarray
    test: np.ndarray


def carve_dev(
    rows: np.ndarray,
    targets: np.ndarray | None,
    seed: int,
    stratify: bool,
    fraction: float = DEV_FRACTION,
    *,
    limit: int | None = None,
    min_kept: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """(kept, held-out) sorted row indices: a seeded `fraction` of `rows` (at least 1, at most `limit`), stratified
    by class when asked; fewer than `min_kept` rows left is an error naming the counts."""
    held = max(1, round(len(rows) * fraction))
    if limit is not None:
        held = min(held, limit)
    if len(rows) - held < min_kept:
        raise BertlensError(
            f"{len(rows)} rows leave fewer than {min_kept} to train on after holding out {held}; add data"
        )
    labels = targets[rows] if stratify and targets is not None else None
    if labels is not None and labels.ndim == 1:
        values, counts = np.unique(labels, return_counts=True)
        lone = np.isin(labels, values[counts < 2])  # [n] rows of a class with one row here: they cannot be on both
        if lone.all():  # sides, so they train; every class that lone: nothing to stratify by
            labels = None
        elif lone.any():  # (a fold's training rows of a sample of a many-class task, say)
            kept, out = carve_dev(rows[~lone], targets, seed, stratify, fraction, limit=limit)
            return np.sort(np.concatenate([kept, rows[lone]])), out
    size = held if limit is not None else fraction  # a fraction: scikit-learn's rounding, as every figure used
    if labels is not None and labels.ndim == 1:  # a stratified hold-out takes a row of every class at least
        classes = len(np.unique(labels))
        if round(len(rows) * fraction) < classes <= len(rows) - classes:
            size = classes
    if labels is not None and labels.ndim == 2:  # label sets: iterative stratification (Sechidis et al. 2011)
        from iterstrat.ml_stratifiers import MultilabelStratifiedShuffleSplit

        splitter = MultilabelStratifiedShuffleSplit(n_splits=1, test_size=size, random_state=seed)
        kept, out = next(splitter.split(rows, labels))
        return np.sort(rows[kept]), np.sort(rows[out])
    kept, out = train_test_split(rows, test_size=size, random_state=seed, stratify=labels)
    return np.sort(kept), np.sort(out)


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
    splitter = _fold_splitter(stratify, targets.ndim == 2)(n_splits=cv_folds, shuffle=True, random_state=seed)
    folds = []
    for train, test in splitter.split(rows, targets[rows] if stratify else None):
        inner_train, inner_dev = carve_dev(rows[train], targets, seed, stratify, dev_fraction)
        folds.append(Fold(inner_train, inner_dev, rows[test]))
    return folds


def _fold_splitter(stratify: bool, label_sets: bool):
    """k-fold splitter: by class, by label set (iterative stratification: every label spread over the folds as
    evenly as the rows allow, Sechidis et al. 2011), or plain."""
    if stratify and label_sets:
        from iterstrat.ml_stratifiers import MultilabelStratifiedKFold

        return MultilabelStratifiedKFold
    return StratifiedKFold if stratify else KFold


def task_splits(task: TaskData, max_dev: int | None = None, seed: int = 0) -> tuple[Split, Split, Split]:
    """train, dev, test; without a dev split, the same seeded 10% of train the sweep would carve (never trained on)."""
    if task.uses_cv:
        raise BertlensError(
            f"task '{task.name}' has no test split (it is cross-validated); this needs train/dev/test "
            "(or hold out a test split with `with_test_split`)"
        )
    train, test = task.splits["train"], task.splits["test"]
    dev = task.splits.get("dev")
    if dev is None:
        rows, held = carve_dev(np.arange(len(train)), train.targets, seed, stratify=task.kind.stratify)
        dev, train = train.subset(held), train.subset(rows)
    if max_dev and len(dev) > max_dev:
        dev = dev.subset(np.sort(np.random.default_rng(seed).choice(len(dev), max_dev, replace=False)))
    return train, dev, test


def with_test_split(task: TaskData, seed: int, fraction: float = 0.2) -> TaskData:
    """A cross-validated task with a seeded, stratified `fraction` held out as its test split; others unchanged."""
    if not task.uses_cv:
        return task
    data = task.splits["all"]
    train, test = carve_dev(np.arange(len(data)), data.targets, seed, task.kind.stratify, fraction)
    return replace(task, splits={"train": data.subset(train), "test": data.subset(test)})


def training_subset(train: Split, size: int, seed: int, kind: TaskKind) -> Split:
    """The first `size` rows of a seeded permutation (nested across sizes); class labels need two classes."""
    rows = np.random.default_rng(seed).permutation(len(train))[:size]
    subset = train.subset(np.sort(rows))
    if kind.classes and len(np.unique(subset.targets)) < 2:
        raise BertlensError(f"a training subset of {size} examples (seed {seed}) has a single class; use a larger size")
    return subset


def resolve_sizes(text: str, train_size: int, option: str = "sizes") -> tuple[int, ...]:
    """'100,300,full' -> sizes; each must fit the training split (errors name `option`, worded per caller)."""
    sizes = []
    for item in (s.strip() for s in text.split(",") if s.strip()):
        value = train_size if item in ("full", "all") else None
        if value is None:
            try:
                value = int(item)
            except ValueError:
                raise OptionError(f"{{{option}}}: '{literal(item)}' is not a number (or 'full')", option) from None
        if value < 2:
            raise OptionError(f"{{{option}}}: {value} is too small; a classifier needs at least 2 examples", option)
        if value > train_size:
            raise OptionError(
                f"{{{option}}}: {value} is more than the task's {train_size} training examples; "
                f"use sizes up to {train_size} (or 'full')",
                option,
            )
        sizes.append(value)
    if not sizes:
        raise OptionError(f"{{{option}}} is empty; e.g. 100,300,1000,full", option)
    return tuple(sorted(set(sizes)))


def hold_out_block(count: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(kept, held-out) row indices of a packed stream: a seeded contiguous block of `fraction` of the rows."""
    held = max(1, round(count * fraction))
    start = int(np.random.default_rng(seed).integers(0, count - held + 1))
    return np.r_[np.arange(0, start), np.arange(start + held, count)], np.arange(start, start + held)
