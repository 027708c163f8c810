"""A task's rows in stage order: seeded, every class spread evenly, the folds' floor first, splits in proportion."""

import numpy as np

from bertlens.tasks.loaders import Split, TaskData
from bertlens.tasks.staging import first_rows, stage_order, stage_orders, task_rows


def _task(counts, kind="classification", splits=("all",), targets=None):
    labels = np.concatenate([np.full(n, c) for c, n in enumerate(counts)]) if targets is None else targets
    rng = np.random.default_rng(0)
    labels = labels[rng.permutation(len(labels))]
    texts = tuple(f"text {i}" for i in range(len(labels)))
    made = {}
    for k, name in enumerate(splits):
        rows = np.arange(k, len(labels), len(splits))
        made[name] = Split(tuple(texts[i] for i in rows), None, labels[rows])
    return TaskData("t", kind, made, class_names=tuple(map(str, range(len(counts)))), folds=10)


def test_every_prefix_keeps_the_class_make_up_and_the_floor_comes_first():
    task = _task([3000, 1500, 400, 12])
    order = stage_order(task, "all", seed=0)
    assert sorted(order) == list(range(task_rows(task)))
    targets = task.splits["all"].targets
    assert (targets[order[:40]] == 3).sum() == 10  # the rare class's fold floor (10 folds) is among the first rows
    for size in (500, 1000, 2000):
        share = np.bincount(targets[order[:size]], minlength=4) / size
        whole = np.bincount(targets, minlength=4) / len(targets)
        assert np.abs(share[:3] - whole[:3]).max() <= 0.02 + 12 / size  # spread evenly (the floor rows aside)


def test_orders_are_seeded():
    task = _task([300, 200])
    assert np.array_equal(stage_order(task, "all", 3), stage_order(task, "all", 3))
    assert not np.array_equal(stage_order(task, "all", 3), stage_order(task, "all", 4))


def test_first_rows_cuts_every_split_in_proportion_and_keeps_their_order():
    task = _task([600, 600], splits=("train", "dev", "test"))
    cut = first_rows(task, stage_orders(task, 0), 300)
    assert task_rows(cut) == 300 and [len(s) for s in cut.splits.values()] == [100, 100, 100]
    for name, split in cut.splits.items():
        position = {t: i for i, t in enumerate(task.splits[name].texts_a)}
        assert [position[t] for t in split.texts_a] == sorted(position[t] for t in split.texts_a)
    assert first_rows(task, stage_orders(task, 0), task_rows(task)) is task


def test_numbers_are_spread_over_their_deciles():
    scores = np.random.default_rng(1).normal(size=5000)
    task = _task([5000], kind="regression", targets=scores)
    order = stage_order(task, "all", 0)
    first = task.splits["all"].targets[order[:500]]
    deciles = np.quantile(scores, np.linspace(0, 1, 11)[1:-1])
    assert np.bincount(np.searchsorted(deciles, first), minlength=10).min() >= 45  # about 50 of each decile


def test_every_label_of_a_label_set_has_its_floor_first():
    rng = np.random.default_rng(2)
    labels = rng.random((2000, 5)) < np.array([0.5, 0.3, 0.1, 0.02, 0.01])
    labels[labels.sum(axis=1) == 0, 0] = True
    texts = tuple(f"t{i}" for i in range(2000))
    task = TaskData("t", "multi_label", {"all": Split(texts, None, labels)}, class_names=tuple("abcde"), folds=5)
    order = stage_order(task, "all", 0)
    assert (labels[order[:25]].sum(axis=0) >= 5).all()  # the folds' floor of every label, the rarest included
