"""`bertlens.export(...)` and `bertlens.probe(...)` are their commands: the same files and figures from Python and
from the shell, the same checks before any model loads, worded for each caller."""

from __future__ import annotations

import json

import pytest

import bertlens
from bertlens.cli.main import main
from tests.conftest import DATA


def test_a_sentence_transformers_export_from_python_is_the_commands(tmp_path, tiny_bert_dir, capsys):
    pytest.importorskip("sentence_transformers")
    texts = tmp_path / "t.txt"
    texts.write_text("a cat\nthe mat\na much longer sentence, with commas\nhello\n")
    common = {"format": "sentence-transformers", "model": str(tiny_bert_dir), "pooler": "max", "texts": str(texts)}
    done = bertlens.export(**common, out=tmp_path / "python")
    argv = ["export", "--format", "sentence-transformers", "--model", str(tiny_bert_dir), "--pooler", "max"]
    assert main([*argv, "--texts", str(texts), "--out", str(tmp_path / "cli"), "--quiet"]) == 0, capsys.readouterr()
    files = [sorted(p.relative_to(d).as_posix() for p in d.rglob("*")) for d in (tmp_path / "python", tmp_path / "cli")]
    assert files[0] == files[1] and "modules.json" in files[0]
    (row,) = done.rows()
    assert row["texts"] == 4 and row["max_abs_diff"] < 1e-5 and "sentence-transformers" in repr(done)


@pytest.mark.parametrize(
    ("call", "python"),
    [
        ({"out": "x"}, "format is required"),
        ({"format": "onnx"}, "out is required"),
        (
            {"format": "sentence-transformers", "out": "x", "quantize": "int8"},
            "quantize apply to format onnx or openvino only",
        ),
        ({"format": "onnx", "out": "x", "samples": 1}, "samples must be at least 2"),
        ({"format": "onnx", "out": "x", "gate_mean": 1.5}, "gate_mean is a cosine"),
        ({"format": "tflite", "out": "x"}, "format must be one of onnx, openvino, sentence-transformers"),
    ],
)
def test_export_refuses_before_any_model_in_pythons_words(no_model_loads, call, python):
    with pytest.raises(bertlens.BertlensError, match="^" + python):
        bertlens.export(**call)


def test_probe_from_python_and_the_shell_give_the_same_scores(tmp_path, tiny_bert_dir, capsys):
    common = ["--model", str(tiny_bert_dir), "--treebank", str(DATA / "ud-ewt"), "--max-sentences", "120"]
    quick = [*common, "--resamples", "50", "--tasks", "upos,sentence_length", "--cache-dir", str(tmp_path / "c")]
    assert main(["probe", "--suite", "linguistic", *quick, "--out", str(tmp_path / "cli"), "--quiet"]) == 0
    capsys.readouterr()
    suite = bertlens.probe(model=str(tiny_bert_dir), treebank=DATA / "ud-ewt", max_sentences=120, resamples=50,
                           tasks=["upos", "sentence_length"], cache_dir=tmp_path / "c")  # fmt: skip
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert [r["task"] for r in suite.rows()] == ["upos", "sentence_length"]
    assert suite.rows() == cli["summary"]  # results.json's summary: the same figures
    assert suite.plot().axes and "upos" in suite._repr_html_()
    paths = suite.save(tmp_path / "python")
    assert json.loads(paths["options"].read_text())["tasks"] == ["upos", "sentence_length"]
    with pytest.raises(bertlens.BertlensError, match="^max_sentences must be at least 1"):
        bertlens.probe(max_sentences=0)
    with pytest.raises(bertlens.BertlensError, match="^unknown probing task 'upso'"):
        bertlens.probe(tasks="upso")
