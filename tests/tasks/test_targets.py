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


# --- decimal marks -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value, mark, number",
    [
        ("0,347", "comma", 0.347),
        ("-1,5", "comma", -1.5),
        ("1.234,5", "comma", 1234.5),
        ("1 234,5", "comma", 1234.5),
        ("12", "comma", 12.0),
        ("0.347", "comma", None),
        ("0,025", "point", None),  # a leading zero never starts a thousands group
        ("1,234.5", "point", 1234.5),
        ("0.347", "point", 0.347),
        ("1,5,2", "comma", None),
    ],
)
def test_numbers_are_read_in_either_mark(value, mark, number):
    from bertlens.tasks.targets import number_in

    assert number_in(value, mark) == number


def test_a_decimal_comma_column_reads_as_the_same_numbers_said_and_forced_marks_are_kept():
    from bertlens.tasks.targets import read_decimal

    reading = read_decimal(["0,347", "-1,5", "1.234,5", "2"], "label column 'Score'")
    assert reading.mark == "comma" and "decimal comma" in reading.note and "--decimal point" in reading.note
    assert [reading.rewrite(v) for v in ("0,347", "-1,5", "1.234,5", "2")] == ["0.347", "-1.5", "1234.5", "2"]
    assert read_decimal(["0.5", "1.25"], "c").mark is None  # a point: as always
    assert read_decimal(["pos", "neg"], "c").mark is None
    assert read_decimal(["0.5", "0,5"], "c").mark is None  # mixed: neither (the guard names --decimal)
    assert read_decimal(["1,5", "2,5"], "c", forced="point").mark is None
    with pytest.raises(OptionError, match="decimal comma \\(1,234 = 1.234\\) or a thousands separator") as error:
        read_decimal(["1,234", "2,500", "3"], "label column 'n'")
    assert error.value.options == ("decimal",)


# --- the guard -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "values, words",
    [
        (["0.5", "0,25", "1.75", "2,5"] * 5, "both decimal marks"),
        ([f"{0.1 * i:.1f}" for i in range(30)] + ["unsure", "?"], "2 values that are not numbers"),
    ],
)
def test_numbers_in_disguise_are_refused_naming_the_options(values, words):
    from bertlens.tasks.targets import numbers_in_disguise

    refusal = numbers_in_disguise(values, "label column 'Score'")
    assert refusal is not None and words in str(refusal) and "task_type" in refusal.options
    assert numbers_in_disguise(["1", "2", "3", "unsure"] * 5, "c") is None  # a scale of a few integers: classes
    assert numbers_in_disguise(["pos", "neg", "0.5"], "c") is None  # mostly words: classes


def test_rare_classes_refuse_a_column_mostly_in_tiny_classes_and_keep_a_few():
    from bertlens.tasks.targets import RARE_SHARE, rare_classes

    ids = {f"A{i}": 1 for i in range(50)} | {"B": 40, "C": 30}
    refusal = rare_classes(ids, 3, "label column 'annotator'")
    assert refusal is not None and "50 of its 52 classes" in str(refusal) and "label_col" in refusal.options
    few = {"a": 100, "b": 100, "c": 1, "d": 2}  # 3 of 203 rows: set aside, as before
    assert rare_classes(few, 3, "c") is None and 3 / 203 <= RARE_SHARE


# --- tag columns ---------------------------------------------------------------------------------------------------
def test_tags_are_read_as_label_sets_and_commas_inside_class_names_are_not():
    from bertlens.tasks.targets import read_tags

    emotions = ["joy", "love", "pride", "anger", "fear"]
    tags = [*emotions, "joy|love", "love|pride", "anger|fear", "joy|pride|love", "fear|joy", "pride|anger"]
    reading = read_tags(tags)
    assert reading is not None and reading.strong and reading.sep == "|" and reading.labels == 5
    assert read_tags(["Arts, Culture", "Science, Tech", "Sports", "Politics, Law", "Food"]) is None
    paths = ["Books, Fiction", "Books, Poetry", "Music, Jazz", "Music, Rock", "Film"]
    assert read_tags(paths) is None or not read_tags(paths).strong  # no label stands alone: not tags
    weak = read_tags(["a|b", "a", "b", "c"])  # one joined value: a hint for a refusal, no more
    assert weak is not None and not weak.strong and "label_sep" in weak.hint()
