"""`bertlens.domain(...)` and `bertlens.longdoc(...)` are their commands: the same figures from Python and from the
shell, texts in memory read like a file's, bad values refused before any model loads in Python's words."""

from __future__ import annotations

import json

import pytest

import bertlens
from bertlens.cli.main import main
from tests.conftest import DATA


def _sst2(n: int) -> tuple[list[str], list[str]]:
    lines = (DATA / "sst2" / "dev.txt").read_text(encoding="utf-8").splitlines()[:n]
    return [line.split(" ", 1)[1].strip() for line in lines], [line[0] for line in lines]


def test_domain_on_a_list_equals_the_command_on_the_file(tmp_path, tiny_bert_dir, capsys):
    texts, _ = _sst2(40)
    corpus = tmp_path / "t.txt"
    corpus.write_text("\n".join(texts) + "\n")
    argv = ["domain", "--texts", str(corpus), "--model", str(tiny_bert_dir), "--data-dir", str(DATA)]
    assert main([*argv, "--out", str(tmp_path / "cli"), "--quiet"]) == 0, capsys.readouterr().err
    gap = bertlens.domain(texts=texts, model=str(tiny_bert_dir), data_dir=str(DATA))
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert gap.adapt == cli["adapt"] and gap.result.user.fertility == cli["user"]["fertility"]
    assert gap.rows()[0]["measure"] == "words" and "no adaptation advised" in gap.verdict
    assert (gap.save(tmp_path / "python")["results"]).is_file()


def test_longdoc_in_memory_equals_the_command_on_a_file(tmp_path, tiny_bert_dir, capsys):
    texts, labels = _sst2(48)
    table = tmp_path / "d.csv"
    table.write_text("text,label\n" + "".join(f'"{t.replace(chr(34), "")}",{y}\n' for t, y in zip(texts, labels)))
    quick = ["--model", str(tiny_bert_dir), "--max-length", "16", "--folds", "3", "--resamples", "50"]
    argv = ["longdoc", "--data", str(table), "--text-col", "text", "--label-col", "label", *quick]
    assert main([*argv, "--strategies", "head,tail", "--out", str(tmp_path / "cli"), "--quiet"]) == 0, (
        capsys.readouterr()
    )
    memory = [t.replace('"', "") for t in texts]
    reading = bertlens.longdoc(texts=memory, labels=labels, model=str(tiny_bert_dir), max_length=16, folds=3,
                               resamples=50, strategies=["head", "tail"])  # fmt: skip
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())["rows"]
    assert [(r["strategy"], r["accuracy"]) for r in reading.rows()] == [(r["strategy"], r["accuracy"]) for r in cli]
    assert "<table>" in reading._repr_html_()


@pytest.mark.parametrize(
    ("command", "call", "message"),
    [
        ("domain", {}, "texts is required"),
        ("domain", {"texts": ["a", 2]}, "texts must be a file path or a list of strings"),
        ("domain", {"texts": ["a", "b"], "samples": 5}, "samples must be at least 10"),
        ("domain", {"texts": [" ", "b"]}, "need at least 2 non-empty texts"),
        ("longdoc", {"texts": ["a", "b"]}, "longdoc classifies documents: give texts with labels"),
        ("longdoc", {"task": "movie_reviews", "strategies": "middle"}, "middle"),
        ("longdoc", {"task": "movie_reviews", "long_text": "tail"}, "long_text picks one reading"),
        ("longdoc", {"task": "movie_reviews", "resamples": 3}, "resamples must be at least"),
    ],
)
def test_bad_values_are_refused_before_any_model(no_model_loads, command, call, message):
    with pytest.raises(bertlens.BertlensError, match=message):
        getattr(bertlens, command)(**call)
