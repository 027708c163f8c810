"""What a label column is read as (tasks/targets.py), and the loaders' regression and multi-label shapes."""

import json

import numpy as np
import pytest

from bertlens.errors import BertlensError, OptionError
from bertlens.tasks.loaders import UserTable, load_user_task
from bertlens.tasks.targets import parse_label_set, read_target_kind


@pytest.mark.parametrize(
    ("values", "kind", "said"),
    [
        (["pos", "neg", "pos"], "classification", ""),
        (["0", "1", "1", "0"], "classification", ""),  # binary ids: nothing to say
        (["1", "2", "3", "4", "5"], "classification", "regression reads them as numbers"),  # a rating scale
        (["3.0", "2.5", "4.25"], "regression", "read as a regression target"),
        ([str(v) for v in range(40)], "regression", "40 distinct integers"),  # too many integers to be classes
        (['["a", "b"]', '["c"]', "[]"], "multi_label", "lists of labels"),
    ],
)
def test_a_label_column_is_read_as_its_kind_and_said(values, kind, said):
    reading = read_target_kind(values, "label column 'y'")
    assert reading.kind == kind and said in reading.note and (bool(reading.note) == bool(said))


@pytest.mark.parametrize(
    ("raw", "sep", "labels"),
    [("2,27", ",", ("2", "27")), ("joy| love |joy", "|", ("joy", "love")), ('["a", 3]', None, ("a", "3")),
     ("joy", None, None), ('["a", {"b": 1}]', None, None)],
)  # fmt: skip
def test_label_sets_parse_lists_and_separated_fields(raw, sep, labels):
    assert parse_label_set(raw, sep) == labels


def write(path, header, rows):
    path.write_text("\n".join([",".join(header), *(",".join(map(str, r)) for r in rows)]) + "\n")
    return path


def scores_file(tmp_path, values):
    return write(tmp_path / "s.csv", ["text", "score"], [(f"text number {i}", v) for i, v in enumerate(values)])


def test_a_numeric_column_is_regression_without_task_type(tmp_path):
    path = scores_file(tmp_path, [round(1 + 0.137 * i, 3) for i in range(30)])
    task = load_user_task(path, UserTable(None, ("text",), "score"), folds=3)
    assert task.kind.name == "regression" and task.splits["all"].targets.dtype == np.float64
    assert "read as a regression target" in task.notes[0] and "--task-type classification" in task.notes[0]


def test_forced_classes_on_a_scale_say_how_many_and_name_regression(tmp_path):
    path = scores_file(tmp_path, [1.5, 2.25, 3.0] * 10)
    task = load_user_task(path, UserTable("classification", ("text",), "score"), folds=3)
    assert task.kind.name == "classification" and len(task.class_names) == 3
    assert any("3 distinct numeric values read as 3 classes" in n and "--task-type regression" in n for n in task.notes)


def test_a_text_column_as_regression_target_is_one_line_naming_the_option(tmp_path):
    path = write(tmp_path / "t.csv", ["text", "label"], [(f"t{i}", "pos" if i % 2 else "neg") for i in range(20)])
    with pytest.raises(OptionError) as error:
        load_user_task(path, UserTable("regression", ("text",), "label"), folds=2)
    assert error.value.options[0] == "label_col" and "holds text" in str(error.value)
    constant = scores_file(tmp_path, [2.5] * 20)
    with pytest.raises(OptionError, match="same number"):
        load_user_task(constant, UserTable("regression", ("text",), "score"), folds=2)


def test_multi_label_shapes_give_the_same_targets(tmp_path):
    sets = [["joy"], ["joy", "love"], ["anger"], ["love"], ["anger", "joy"], []] * 5
    texts = [f"comment {i}" for i in range(len(sets))]
    separated = tmp_path / "sep.tsv"
    separated.write_text("text\tlabels\n" + "".join(f"{t}\t{'|'.join(s) or 'joy'}\n" for t, s in zip(texts, sets)))
    columns = write(
        tmp_path / "cols.csv",
        ["text", "anger", "joy", "love"],
        [(t, *(int(n in (s or ["joy"])) for n in ("anger", "joy", "love"))) for t, s in zip(texts, sets)],
    )
    lists = tmp_path / "lists.jsonl"
    lists.write_text("".join(json.dumps({"text": t, "labels": s or ["joy"]}) + "\n" for t, s in zip(texts, sets)))
    a = load_user_task(separated, UserTable(None, ("text",), "labels", label_sep="|"), folds=2)
    b = load_user_task(columns, UserTable(None, ("text",), None, label_cols=("anger", "joy", "love")), folds=2)
    c = load_user_task(lists, UserTable(None, ("text",), "labels"), folds=2)
    for task in (a, b, c):
        assert task.kind.name == "multi_label" and task.class_names == ("anger", "joy", "love")
        assert np.array_equal(task.splits["all"].targets, a.splits["all"].targets)
    assert a.splits["all"].targets.sum() == sum(len(s or ["joy"]) for s in sets)


def test_rare_labels_are_set_aside_by_name_and_one_label_is_refused(tmp_path):
    rows = [(f"c{i}", "joy|rare" if i == 0 else ("joy" if i % 2 else "love")) for i in range(20)]
    path = tmp_path / "r.tsv"
    path.write_text("text\tlabels\n" + "".join(f"{t}\t{lab}\n" for t, lab in rows))
    task = load_user_task(path, UserTable(None, ("text",), "labels", label_sep="|"), folds=3)
    assert task.class_names == ("joy", "love") and any("'rare' (1)" in n for n in task.notes)
    single = tmp_path / "one.tsv"
    single.write_text("text\tlabels\n" + "".join(f"c{i}\tjoy\n" for i in range(20)))
    with pytest.raises(BertlensError, match="needs two or more"):
        load_user_task(single, UserTable(None, ("text",), "labels", label_sep="|"), folds=3)


def test_label_options_refuse_another_kind(tmp_path):
    path = scores_file(tmp_path, list(range(10)))
    with pytest.raises(OptionError) as error:
        load_user_task(path, UserTable("classification", ("text",), "score", label_sep=","))
    assert error.value.options == ("label_sep", "task_type")
