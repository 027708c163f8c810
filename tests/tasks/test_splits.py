import numpy as np
import pytest

from bertlens.errors import BertlensError
from bertlens.tasks.loaders import Split, TaskData
from bertlens.tasks.splits import carve_dev, hold_out_block, make_folds, task_splits, with_test_split


def test_carve_dev_is_seeded_disjoint_and_bounded():
    kept, held = carve_dev(np.arange(100), None, 3, False, 0.1)
    assert len(held) == 10 and not set(kept) & set(held) and len(kept) + len(held) == 100
    np.testing.assert_array_equal(held, carve_dev(np.arange(100), None, 3, False, 0.1)[1])
    assert len(carve_dev(np.arange(100), None, 3, False, 0.5, limit=7)[1]) == 7
    with pytest.raises(BertlensError, match="fewer than 2 to train on"):
        carve_dev(np.arange(2), None, 0, False, 0.4, min_kept=2)


def test_carve_dev_keeps_class_shares():
    targets = np.array([0] * 80 + [1] * 20)
    _, held = carve_dev(np.arange(100), targets, 0, True, 0.2)
    assert (targets[held] == 1).sum() == 4  # 20% of each class, not of the whole


def test_every_fold_scores_each_row_once_and_chooses_on_its_own_training_rows():
    targets = np.array([0, 1] * 25)
    folds = make_folds({"all": np.arange(50)}, targets, stratify=True, cv_folds=5, seed=0)
    tested = np.concatenate([f.test for f in folds])
    assert sorted(tested) == list(range(50))
    for fold in folds:
        assert not set(fold.dev) & set(fold.test) and not set(fold.train) & set(fold.test)


def _task(n: int) -> TaskData:
    split = Split([f"text {i}" for i in range(n)], None, np.array([i % 2 for i in range(n)]))
    return TaskData("t", "classification", {"all": split})


def test_a_cross_validated_task_gets_a_stratified_test_split_and_then_train_dev_test():
    task = with_test_split(_task(50), seed=1)
    assert len(task.splits["test"]) == 10 and (task.splits["test"].targets == 1).sum() == 5
    train, dev, test = task_splits(task, seed=1)
    assert len(train) + len(dev) == 40 and len(test) == 10
    with pytest.raises(BertlensError, match="cross-validated"):
        task_splits(_task(50))


def test_a_packed_stream_holds_out_one_contiguous_block():
    kept, held = hold_out_block(100, 0.05, seed=2)
    assert len(held) == 5 and np.all(np.diff(held) == 1) and sorted([*kept, *held]) == list(range(100))


def test_a_catalog_task_takes_the_folds_asked_for():
    from bertlens.tasks.catalog import get_task
    from bertlens.tasks.loaders import load_catalog_task
    from tests.conftest import DATA

    assert load_catalog_task(get_task("mr"), DATA).folds == 10  # the catalog's default
    assert load_catalog_task(get_task("mr"), DATA, folds=5).folds == 5  # `--folds 5` is no longer ignored


def test_label_sets_fold_by_iterative_stratification():
    rng = np.random.default_rng(0)
    targets = np.column_stack([rng.random(300) < p for p in (0.5, 0.2, 0.05)])  # the rare label: ~15 rows
    folds = make_folds({"all": np.arange(300)}, targets, stratify=True, cv_folds=5, seed=0)
    tests = np.concatenate([f.test for f in folds])
    assert sorted(tests) == list(range(300))  # a partition
    rare = [targets[f.test, 2].sum() for f in folds]
    assert max(rare) - min(rare) <= 1  # every fold holds its share of the rare label
    for f in folds:
        assert not set(f.dev) & set(f.train) and targets[f.dev].any(axis=0).all()


def test_a_class_of_one_row_trains_and_the_rest_stay_stratified():
    """A fold's training rows can hold a class once (a sample of a 100-class task): that row cannot be on both sides
    of the dev split, so it trains; the other classes keep their shares (scikit-learn refused the whole split)."""
    targets = np.array([0] * 40 + [1] * 20 + [2] + [3])
    rows = np.arange(len(targets))
    kept, dev = carve_dev(rows, targets, seed=0, stratify=True, fraction=0.25)
    assert {60, 61} <= set(kept) and not {60, 61} & set(dev)
    assert sorted(np.concatenate([kept, dev])) == list(rows)
    assert np.bincount(targets[dev], minlength=4)[:2].tolist() == [10, 5]
    every_class_once = carve_dev(np.arange(5), np.arange(5), seed=0, stratify=True)
    assert len(every_class_once[1]) == 1 and len(every_class_once[0]) == 4
    folds = make_folds({"all": np.arange(80)}, np.array([0] * 60 + [1] * 18 + [2, 2]), stratify=True, cv_folds=10,
                       seed=0)  # fmt: skip
    assert sorted(np.concatenate([f.test for f in folds]).tolist()) == list(range(80))
