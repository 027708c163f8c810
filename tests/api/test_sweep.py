"""`bertlens.sweep(...)` and `bertlens sweep ...` are one definition: the same rows and recipe, the same checks
before any model loads (each worded for its caller), data in memory read with the file loaders' checks."""

from __future__ import annotations

import json

import numpy as np
import pytest

import bertlens
from bertlens.cli.main import main
from bertlens.representation.recipe import Recipe
from tests.conftest import DATA


def test_python_and_the_command_line_give_the_same_rows_and_recipe(tmp_path, capsys):
    python = tmp_path / "python"
    run = bertlens.sweep(task="stsb", max_examples=300, seed=1, out=python, data_dir=str(DATA))
    argv = ["sweep", "--task", "stsb", "--max-examples", "300", "--seed", "1", "--out", str(tmp_path / "cli")]
    assert main([*argv, "--quiet"]) == 0, capsys.readouterr().err
    rows = [json.loads((d / "results.json").read_text())["rows"] for d in (python, tmp_path / "cli")]
    assert rows[0] == rows[1] and rows[0]
    assert (python / "recipe.json").read_text() == (tmp_path / "cli" / "recipe.json").read_text()
    assert run.recipe.to_dict() == Recipe.load(python / "recipe.json").to_dict()
    assert json.loads((python / "options.json").read_text())["max_examples"] == 300
    assert json.loads((tmp_path / "cli" / "options.json").read_text())["seed"] == 1


def test_a_bad_value_is_refused_in_each_callers_words_before_any_model(no_model_loads, capsys):
    with pytest.raises(bertlens.BertlensError, match=r"^max_examples must be at least 1"):
        bertlens.sweep(task="stsb", max_examples=-1)
    assert main(["sweep", "--task", "stsb", "--max-examples", "-1"]) == 1
    assert "error: --max-examples must be at least 1" in capsys.readouterr().err
    with pytest.raises(bertlens.BertlensError, match=r"^texts takes texts alone; protocols belongs to data"):
        bertlens.sweep(texts=[f"text {i}" for i in range(20)], protocols="probe")
    assert main(["sweep", "--texts", str(DATA / "sst2" / "dev.txt"), "--protocols", "probe"]) == 1
    assert "error: --texts takes texts alone; --protocols belongs to --data" in capsys.readouterr().err
    assert main(["sweep", "--task", "stsb", "--settle-tolerance", "2"]) == 1
    assert "error: --settle-tolerance 2.0 is not between 0 and 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"task": "stsb", "data": "x.csv"}, "give exactly one of task, data or texts (got task, data)"),
        ({"task": "stsb", "max_exmples": 5}, "unknown option 'max_exmples': did you mean 'max_examples'?"),
        ({"task": "stsb", "folds": 1}, "folds must be at least 2"),
        ({"task": "stsb", "resamples": 5}, "resamples must be at least 20"),
        ({"task": "stsb", "seed": -3}, "seed must be between 0 and 4294967295"),
        ({"task": "stsb", "precision": "fp8"}, "precision must be one of fp32, bf16, auto"),
        ({"task": "stsb", "poolers": "mean,maxx"}, "unknown pooler 'maxx'"),
        ({"texts": ["a", "b"], "labels": [1]}, "texts has 2 items and labels 1"),
        ({"texts": "t.txt", "max_examples": 4}, "max_examples must be at least 8"),
        ({"task": "stsb", "max_length": float("nan")}, "max_length must be a finite number"),
        ({"task": "stsb", "rows": "most"}, "rows must be one of auto, all"),
        ({"task": "stsb", "settle_tolerance": 0}, "settle_tolerance 0 is not between 0 and 1"),
    ],
)
def test_the_options_checks_name_the_keyword(options, message, no_model_loads):
    with pytest.raises(bertlens.BertlensError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        bertlens.sweep(**options)


def test_texts_and_labels_in_memory_sweep_and_the_result_shows_itself(tmp_path, tiny_bert_dir):
    import matplotlib.figure

    lines = (DATA / "sst2" / "train.txt").read_text().splitlines()[:120]
    labels, texts = zip(*(line.split(" ", 1) for line in lines), strict=True)
    run = bertlens.sweep(
        texts=list(texts), labels=list(labels), model=str(tiny_bert_dir), poolers=["mean"], folds=3, resamples=50,
        cache_dir=tmp_path / "cache",
    )  # fmt: skip
    table = run.to_arrow()
    assert table.num_rows == len(run.rows()) and {"candidate", "value", "ci_low", "ci_high"} <= set(table.column_names)
    assert run.recommended in table.column("candidate").to_pylist()
    assert f"<b>{run.recommended}</b>" in run._repr_html_()
    assert isinstance(run.plot(), matplotlib.figure.Figure)
    paths = run.save(tmp_path / "out")
    record = json.loads(paths["options"].read_text())
    assert record["texts"] == "<in memory: 120 items>" and record["folds"] == 3
    assert json.loads(paths["results"].read_text())["rows"] == run.rows()


def test_a_table_in_memory_names_its_bad_row(tiny_bert_dir, no_model_loads):
    data = {"review": ["good", "  ", "bad", "fine"] * 5, "stars": [1, 0, 0, 1] * 5}
    with pytest.raises(
        bertlens.BertlensError, match="^the in-memory data: blank text in text_col 'review' on row 2, 6, 10 and 2 more"
    ):
        bertlens.sweep(data=data, text_col="review", label_col="stars", model=str(tiny_bert_dir))


def test_layers_may_be_given_as_numbers(tmp_path, tiny_bert_dir):
    texts = [f"sentence number {i} about {'cats' if i % 2 else 'rain'}" for i in range(40)]
    labels = [i % 2 for i in range(40)]
    run = bertlens.sweep(
        texts=texts, labels=labels, model=str(tiny_bert_dir), poolers="mean", layers=[1, 2], folds=2, resamples=50,
        cache_dir=tmp_path / "cache",
    )  # fmt: skip
    singles = {c for c in run.to_arrow().column("candidate").to_pylist() if c.startswith("mean/L")}
    assert singles >= {"mean/L1", "mean/L2"} and "mean/L0" not in singles
    assert np.isfinite([r["value"] for r in run.rows() if r["value"] is not None]).all()


@pytest.mark.parametrize(
    ("labels", "kind", "metric"),
    [
        ([1.5 + 0.07 * i for i in range(36)], "regression", "spearman"),  # numbers: a regression task
        ([["warm"], ["dull"], ["warm", "dull"]] * 12, "multi_label", "micro_f1"),  # lists: a set of labels each
    ],
)
def test_in_memory_numbers_and_label_lists_are_their_kinds(labels, kind, metric, tiny_bert_dir, tmp_path):
    import bertlens

    texts = [f"a {'warm' if i % 3 != 1 else 'dull'} film, take {i}" for i in range(36)]
    run = bertlens.sweep(texts=texts, labels=labels, model=str(tiny_bert_dir), folds=3, resamples=50,
                         cache_dir=tmp_path)  # fmt: skip
    assert run.result.kind.name == kind and run.result.main.metric == metric
    assert len(run.to_arrow()) == len(run.result.main.candidates)
