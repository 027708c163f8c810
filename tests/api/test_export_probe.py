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


def test_parity_texts_are_drawn_at_random_not_the_files_first(tmp_path):
    """A file sorted by genre (STS-B's training file runs from captions to headlines) must not check, calibrate and
    judge an export on its first genre only: the sample is seeded, spans the file, and the record says so."""
    from bertlens.api.export import ExportOptions, parity_texts

    path = tmp_path / "sorted.txt"
    path.write_text("".join(f"caption {i}\n" for i in range(600)) + "".join(f"headline {i}\n" for i in range(600)))
    options = ExportOptions(format="onnx", out=tmp_path / "out", texts=path, samples=100)
    texts, source = parity_texts(options)
    assert len(texts) == len(set(texts)) == 100
    headlines = sum(t.startswith("headline") for t in texts)
    assert 30 <= headlines <= 70  # the file's first 100 lines hold none
    assert texts[:10] != sorted(texts[:10])  # a random order: a token budget cutting the first texts keeps a sample
    assert parity_texts(options) == (texts, source)  # seeded
    assert "100 of 1200 distinct texts, drawn at random (seed 0)" in source
    every, said = parity_texts(ExportOptions(format="onnx", out=tmp_path / "out", texts=path, samples=5000))
    assert sorted(every) == sorted(set(path.read_text().split("\n")) - {""}) and "all 1200 distinct texts" in said


def test_calibration_texts_are_at_most_512_drawn_at_random(tmp_path):
    from bertlens.api.export import CALIBRATION_TEXTS, ExportOptions, _calibration

    path = tmp_path / "sorted.txt"
    path.write_text("".join(f"caption {i}\n" for i in range(1000)) + "".join(f"headline {i}\n" for i in range(1000)))
    options = ExportOptions(format="onnx", out=tmp_path / "out", quantize="int8", calibration=path)
    texts = _calibration(options)
    assert len(texts) == len(set(texts)) == CALIBRATION_TEXTS == 512
    assert 200 <= sum(t.startswith("headline") for t in texts) <= 312


def test_without_texts_or_a_data_directory_the_export_asks_for_texts(tmp_path, monkeypatch):
    from bertlens.api.export import ExportOptions, parity_texts
    from bertlens.errors import OptionError

    monkeypatch.setenv("BERTLENS_DATA", str(tmp_path / "none"))
    with pytest.raises(
        OptionError,
        match=r"no parity texts: data directory .* does not exist; set BERTLENS_DATA or pass data_dir, or give texts \(",
    ):
        parity_texts(ExportOptions(format="onnx", out=tmp_path / "out"))
