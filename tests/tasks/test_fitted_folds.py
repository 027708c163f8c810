"""Folds that fit the data (tasks/fitted_folds.py): the default lowered to the rarest class, singletons set aside,
both said; folds the caller gave kept and refused as before."""

import numpy as np
import pytest

from bertlens.errors import OptionError
from bertlens.tasks.fitted_folds import DEFAULT_FOLDS, class_fits, fit_folds
from bertlens.tasks.loaders import UserTable, load_user_task


def test_the_rarest_class_sets_the_folds_and_a_single_row_is_set_aside():
    fit = fit_folds({"a": 50, "b": 6, "c": 1}, DEFAULT_FOLDS, 57)
    assert (fit.folds, fit.set_aside) == (6, ("c",))
    assert "1 class with fewer than 3 rows set aside" in fit.notes[0] and "'c'" in fit.notes[0]
    assert "6-fold cross-validation, not the default 10: the rarest class, 'b', has 6 rows" in fit.notes[1]


def test_folds_never_go_below_two_and_nothing_changes_when_the_data_fills_them():
    assert fit_folds({"a": 50, "b": 3}, 10, 53).folds == 3
    assert fit_folds({"a": 50, "b": 2}, 10, 52).set_aside == ("b",)  # 2 rows: one to test leaves one to train on
    assert fit_folds({"a": 50, "b": 2}, 10, 52, "label").folds == 2  # a label's dev is not stratified per label
    assert fit_folds({"a": 50, "b": 40}, 10, 90) == fit_folds({"a": 50, "b": 40}, 10, 90)
    unchanged = fit_folds({"a": 50, "b": 40}, 10, 90)
    assert (unchanged.folds, unchanged.set_aside, unchanged.notes) == (10, (), ())
    assert fit_folds({}, 10, 9).folds == 4  # a number per text: two rows a fold at most


def write(tmp_path, counts):
    path = tmp_path / "small.csv"
    rows = [f"text {name} {i},{name}" for name, n in counts.items() for i in range(n)]
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    return path


def test_a_small_file_loads_with_fewer_folds_and_says_so(tmp_path):
    path = write(tmp_path, {"loc": 70, "num": 60, "hum": 24, "abbr": 6, "lone": 1})
    task = load_user_task(path, UserTable("classification", ("text",), "label"))
    assert task.folds == 6 and not task.folds_chosen
    assert task.class_names == ("abbr", "hum", "loc", "num") and len(task.splits["all"]) == 160
    assert any("'lone'" in n for n in task.notes) and any("6-fold cross-validation" in n for n in task.notes)
    assert set(np.unique(task.splits["all"].targets)) == {0, 1, 2, 3}


def test_folds_the_caller_gave_are_kept_and_refused_in_their_words(tmp_path):
    path = write(tmp_path, {"a": 70, "b": 6})
    assert load_user_task(path, UserTable("classification", ("text",), "label"), folds=5).folds == 5
    with pytest.raises(OptionError) as error:
        load_user_task(path, UserTable("classification", ("text",), "label"), folds=10)
    assert "lower --folds or leave it out" in error.value.as_flags()


def test_a_multi_label_file_lowers_its_folds_to_its_rarest_label(tmp_path):
    path = tmp_path / "tags.tsv"
    rows = [
        f"t{i}\t{'joy' if i % 2 else 'anger'}{',love' if i < 4 else ''}{',awe' if i == 9 else ''}" for i in range(40)
    ]
    path.write_text("text\tlabels\n" + "\n".join(rows) + "\n")
    task = load_user_task(path, UserTable(None, ("text",), "labels", label_sep=","))
    assert task.kind.name == "multi_label" and task.folds == 4
    assert task.class_names == ("anger", "joy", "love") and any("'awe'" in n for n in task.notes)


def test_a_class_fits_when_every_fold_tests_one_row_and_trains_on_two():
    assert class_fits(3, 3) and class_fits(4, 2) and class_fits(10, 10)
    assert not class_fits(3, 2) and not class_fits(2, 2) and not class_fits(5, 6)


def test_folds_given_too_many_for_a_small_class_are_refused_not_crashed(tmp_path):
    path = write(tmp_path, {"a": 40, "b": 3})
    with pytest.raises(OptionError, match="has 3 examples, too few for"):
        load_user_task(path, UserTable("classification", ("text",), "label"), folds=2)
