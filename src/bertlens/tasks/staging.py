"""A task's rows in the order a staged sweep reads them, and the task cut to its first rows.

Each split gets its own seeded order in which every prefix keeps the split's make-up: the rows of each class (or, for
numbers, of each score decile) are spread evenly over the order, and the few rows each class needs first (what the
folds need: loaders.class_floor) come before all others, so a class is never missing from a stage. A stage of n of
N rows takes the first round(n / N * len(split)) rows of every split, so the splits keep their proportions.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bertlens.tasks.loaders import Split, TaskData, class_floor

SCORE_BINS = 10  # numbers: orders are spread over their deciles


def task_rows(task: TaskData) -> int:
    """The rows a staged sweep counts: examples over every split (a retrieval task has none)."""
    return sum(len(split) for split in task.splits.values())


def _groups(task: TaskData, split: Split) -> np.ndarray | None:
    """[n] the group each row is spread within (its class, its score decile), or None for label sets."""
    targets = split.targets
    if task.kind.classes:
        return targets.astype(np.int64)
    if task.kind.label_sets or targets.ndim != 1 or len(targets) == 0:
        return None
    edges = np.quantile(targets, np.linspace(0, 1, SCORE_BINS + 1)[1:-1])
    return np.searchsorted(edges, targets, side="right")


def _floor_first(task: TaskData, split: Split, floor: int, rng: np.random.Generator) -> np.ndarray:
    """[n] bool: the rows put before all others so every class (every label of a label set) has `floor` of them."""
    first = np.zeros(len(split), dtype=bool)
    targets = split.targets
    if task.kind.classes:
        for c in np.unique(targets):
            first[rng.permutation(np.flatnonzero(targets == c))[:floor]] = True
    elif task.kind.label_sets:
        for label in np.argsort(targets.sum(axis=0), kind="stable"):  # the rarest labels first
            have = np.flatnonzero(targets[:, label])
            missing = floor - int(first[have].sum())
            if missing > 0:
                first[rng.permutation(have[~first[have]])[:missing]] = True
    return first


def stage_order(task: TaskData, split_name: str, seed: int) -> np.ndarray:
    """[n] the split's rows in the order stages take them (seeded; the floor rows first, then spread by group)."""
    split = task.splits[split_name]
    rng = np.random.default_rng([seed, len(split), sum(map(ord, split_name))])
    key = rng.random(len(split))  # [n] in [0, 1)
    groups = _groups(task, split)
    if groups is not None:  # a row's key: where it falls within its group (evenly spaced, jittered)
        for g in np.unique(groups):
            rows = rng.permutation(np.flatnonzero(groups == g))
            key[rows] = (np.arange(len(rows)) + rng.random(len(rows))) / len(rows)
    floor = class_floor(task, split_name) if task.kind.classes or task.kind.label_sets else 0
    key[_floor_first(task, split, floor, rng)] -= 1.0  # before every other row
    return np.argsort(key, kind="stable")


def stage_orders(task: TaskData, seed: int) -> dict[str, np.ndarray]:
    """Every split's stage order."""
    return {name: stage_order(task, name, seed) for name in task.splits}


def first_rows(task: TaskData, orders: dict[str, np.ndarray], rows: int) -> TaskData:
    """The task cut to its first `rows` of `task_rows(task)` by the orders, every split in proportion (each keeps its
    rows in their original order)."""
    total = task_rows(task)
    if rows >= total:
        return task
    splits = {}
    for name, split in task.splits.items():
        take = max(1, round(len(split) * rows / total))
        splits[name] = split.subset(np.sort(orders[name][:take]))
    return replace(task, splits=splits)
