import pytest

from bertlens.errors import BertlensError
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import UserTable, load_catalog_task, load_user_task
from tests.conftest import DATA


@pytest.mark.parametrize(
    "name, sizes",
    [
        ("sst2", {"train": 6920, "dev": 872, "test": 1821}),
        ("stsb", {"train": 5749, "dev": 1500, "test": 1379}),
        ("trec", {"train": 5452, "test": 500}),
        ("mr", {"all": 10662}),
        ("subj", {"all": 10000}),
    ],
)
def test_catalog_tasks_load_with_their_documented_sizes(name, sizes):
    task = load_catalog_task(get_task(name), DATA)
    assert {k: len(v) for k, v in task.splits.items()} == sizes
    assert task.uses_cv == ("test" not in sizes)


def test_stsb_scores_are_floats_and_pairs():
    task = load_catalog_task(get_task("stsb"), DATA)
    test = task.splits["test"]
    assert (
        test.texts_b is not None
        and test.targets.dtype.kind == "f"
        and 0 <= test.targets.min() <= test.targets.max() <= 5
    )


def test_unknown_task_suggests():
    with pytest.raises(BertlensError, match="did you mean 'sst2'"):
        get_task("sst-2")


def test_max_examples_is_a_seeded_subset():
    a = load_catalog_task(get_task("sst2"), DATA, max_examples=100, seed=1)
    b = load_catalog_task(get_task("sst2"), DATA, max_examples=100, seed=1)
    assert a.splits["train"].texts_a == b.splits["train"].texts_a and len(a.splits["train"]) == 100


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_user_csv_with_header_and_tsv_without(tmp_path):
    rows = [("good film", "pos"), ("bad film", "neg")] * 10
    csv_path = write(tmp_path, "a.csv", "text,label\n" + "".join(f"{t},{label}\n" for t, label in rows))
    tsv_path = write(tmp_path, "a.tsv", "".join(f"{label}\t{t}\n" for t, label in rows))
    a = load_user_task(csv_path, UserTable("classification", ("text",), "label"))
    b = load_user_task(tsv_path, UserTable("classification", (1,), 0, header=False))
    assert a.splits["all"].texts_a == b.splits["all"].texts_a
    assert a.splits["all"].targets.tolist() == b.splits["all"].targets.tolist()
    assert a.class_names == ("neg", "pos")


def test_user_similarity_pairs(tmp_path):
    path = write(tmp_path, "p.jsonl", "".join(f'{{"a": "x{i}", "b": "y{i}", "s": {i % 5}}}\n' for i in range(30)))
    task = load_user_task(path, UserTable("similarity", ("a", "b"), "s"))
    assert task.splits["all"].targets[:3].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize(
    "content, kind, cols, message",
    [
        (
            "text,label\na,1\nb,\nc,0\n,1\n",
            "classification",
            ("text",),
            "blank label on line 3; blank text in text_col 'text' on line 5",
        ),
        ("text,label\n" + "a,1\n" * 20, "classification", ("text",), "only one class"),
        ("a,b,s\nx,y,high\n", "similarity", ("a", "b"), "score 'high' is not a number on line 2"),
        ("a,s\nx,1\n", "similarity", ("a", "b"), "no column 'b'"),
        (
            "text,label\n" + "a,1\n" * 20 + "b,0\n" * 3,
            "classification",
            ("text",),
            "has 3 examples, fewer than the 10 folds",
        ),
    ],
)
def test_bad_user_files_are_clear_errors(tmp_path, content, kind, cols, message):
    path = write(tmp_path, "bad.csv", content)
    label = "s" if kind == "similarity" else "label"
    with pytest.raises(BertlensError, match=message):
        load_user_task(path, UserTable(kind, cols, label), folds=10)  # folds given: kept, and a rare class refused


def test_drop_invalid_drops_and_counts(tmp_path):
    path = write(tmp_path, "a.csv", "text,label\n" + "a,1\nb,0\n" * 10 + "c,\n")
    task = load_user_task(path, UserTable("classification", ("text",), "label"), drop_invalid=True)
    assert task.dropped == 1 and len(task.splits["all"]) == 20


class FakeSplit:
    """Stands in for a `datasets.Dataset`: column names and column access."""

    def __init__(self, columns: dict):
        self.columns = columns
        self.column_names = list(columns)

    def __getitem__(self, key):
        return self.columns[key]


def fake_datasets(monkeypatch, splits: dict):
    import sys
    import types

    module = types.ModuleType("datasets")
    module.load_dataset = lambda name, config=None: {k: FakeSplit(v) for k, v in splits.items()}
    monkeypatch.setitem(sys.modules, "datasets", module)


def test_hf_dataset_splits_map_and_hidden_test_labels_are_dropped(monkeypatch):
    from bertlens.tasks.loaders import load_hf_task

    train = {"sentence": [f"s{i}" for i in range(40)], "label": [i % 2 for i in range(40)]}
    fake_datasets(
        monkeypatch,
        {
            "train": train,
            "validation": {"sentence": ["a", "b"], "label": [0, 1]},
            "test": {"sentence": ["c", "d"], "label": [-1, -1]},
        },
    )
    task = load_hf_task("glue", config="sst2", kind="classification", text_cols=("sentence",), label_col="label")
    assert set(task.splits) == {"train", "test"} and task.splits["test"].texts_a == ("a", "b")
    assert task.name == "glue/sst2" and len(task.splits["train"]) == 40


def test_hf_dataset_missing_column_is_a_clear_error(monkeypatch):
    from bertlens.tasks.loaders import load_hf_task

    fake_datasets(monkeypatch, {"train": {"text": ["x"], "label": [0]}})
    with pytest.raises(BertlensError, match="no column 'sentence'"):
        load_hf_task("x", kind="classification", text_cols=("sentence",), label_col="label")


def test_a_test_file_that_repeats_training_rows_is_kept_apart_and_unseen_labels_are_named(tmp_path):
    rows = [f"text number {i},{('pos', 'neg')[i % 2]}" for i in range(120)]
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "\n".join(rows) + "\n")
    test = tmp_path / "test.csv"  # every test row is also a training row; 12 carry a label training never has
    test.write_text("text,label\n" + "\n".join(rows[:48] + [f"odd text {i},neutral" for i in range(12)]) + "\n")
    task = load_user_task(train, UserTable("classification", ("text",), "label", split_files={"test": test}))
    assert len(task.splits["train"]) == 72 and len(task.splits["test"]) == 60  # the 48 shared rows leave training
    read = [n for n in task.notes if n.startswith("read ")]  # what each file was read as (io/dialect.py)
    assert read == [
        "read train.csv as comma-separated (detected), UTF-8",
        "read test.csv as comma-separated (detected), UTF-8",
    ]
    overlap, unseen = [n for n in task.notes if n not in read]
    assert overlap.startswith("48 training rows are also in the test split (the same text): dropped from training")
    assert unseen.startswith("12 test rows carry labels training never saw ('neutral')")
    train_texts = set(task.splits["train"].texts_a)
    assert not train_texts & set(task.splits["test"].texts_a)


def _many_classes(path, classes: int, rows_of, seed: int = 0):
    """A CSV of `classes` classes, class c with rows_of(c) texts, rows shuffled."""
    import random

    rows = [(f"text {i} about topic {c}", f"class{c}") for c in range(classes) for i in range(rows_of(c))]
    random.Random(seed).shuffle(rows)
    path.write_text("text,label\n" + "".join(f"{t},{label}\n" for t, label in rows))
    return path


def test_max_examples_keeps_every_class_what_the_folds_need(tmp_path):
    """The issue's case: 100 classes, every one >= 20 texts, --max-examples 2000 --folds 5. A plain random draw
    leaves some class under 5; the draw is made by class instead, and says so."""
    import numpy as np

    path = _many_classes(tmp_path / "t.csv", 100, lambda c: 20 + (c * 37) % 200)
    table = UserTable("classification", ("text",), "label")
    data = load_user_task(path, table, folds=5, max_examples=2000, seed=0)
    counts = np.bincount(data.splits["all"].targets, minlength=100)
    assert len(data.splits["all"]) == 2000 and counts.min() >= 5 and len(data.class_names) == 100
    assert any("drawn by class" in note for note in data.notes)


def test_classes_that_cannot_all_fit_are_dropped_by_name_and_renumbered(tmp_path):
    import numpy as np

    path = _many_classes(tmp_path / "t.csv", 10, lambda c: 30 + c)  # class9 the largest, class0 the rarest
    table = UserTable("classification", ("text",), "label")
    data = load_user_task(path, table, folds=5, max_examples=22, seed=3)
    assert data.class_names == ("class6", "class7", "class8", "class9")  # 4 x 5 fit in 22: the 4 largest kept
    targets = data.splits["all"].targets
    assert len(targets) == 22 and set(targets.tolist()) == {0, 1, 2, 3} and np.bincount(targets).min() >= 5
    note = next(n for n in data.notes if "dropped" in n)
    assert "6 rarest classes" in note and "'class0'" in note and "'class5'" in note


def test_a_draw_that_already_fits_is_the_plain_seeded_draw(tmp_path):
    """Figures made before the by-class draw stay as they were wherever the random draw already fitted."""
    import numpy as np

    path = _many_classes(tmp_path / "t.csv", 2, lambda c: 500)
    table = UserTable("classification", ("text",), "label")
    full = load_user_task(path, table, folds=5)
    data = load_user_task(path, table, folds=5, max_examples=200, seed=7)
    rows = np.sort(np.random.default_rng(7).choice(1000, 200, replace=False))
    assert data.splits["all"].texts_a == tuple(full.splits["all"].texts_a[i] for i in rows)
    assert data.notes == ("read t.csv as comma-separated (detected), UTF-8",)  # no note of a draw by class


@pytest.mark.parametrize("value", [-1, 0, 2.5, "10", True])
def test_the_library_refuses_a_bad_max_examples_in_its_own_words(value):
    with pytest.raises(BertlensError, match="^max_examples must be"):
        load_catalog_task(get_task("trec"), DATA, max_examples=value)


@pytest.mark.parametrize(("keyword", "value"), [("folds", 1), ("folds", 2.0), ("seed", -1)])
def test_the_library_refuses_bad_folds_and_seeds_in_its_own_words(keyword, value):
    with pytest.raises(BertlensError, match=f"^{keyword} must be"):
        load_catalog_task(get_task("trec"), DATA, max_examples=50, **{keyword: value})
