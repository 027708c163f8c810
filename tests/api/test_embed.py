"""`bertlens.embed(...)` and `bertlens embed ...` are one definition: the same vectors and files, the same checks
before any model loads (each worded for its caller), texts in memory read with the file's checks."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

import bertlens
from bertlens.cli.main import main
from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe

TEXTS = ["a man plays a guitar", "the cat sleeps", "rain falls on the town", "hello"]


@pytest.fixture
def texts_file(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(TEXTS) + "\n")
    return path


def test_python_and_the_command_line_write_the_same_vectors(tmp_path, texts_file, tiny_bert_dir, capsys):
    """A file from Python with out= and from the shell: byte-equal .npy; in memory without out=: the same vectors
    as the Embedder, and save() writes what the command writes (.npy and .parquet)."""
    fp32 = {"model": str(tiny_bert_dir), "pooler": "max", "precision": "fp32"}
    run = bertlens.embed(str(texts_file), out=tmp_path / "python.npy", **fp32)
    argv = ["embed", str(texts_file), "--out", str(tmp_path / "cli.npy"), "--quiet"]
    assert main([*argv, "--model", str(tiny_bert_dir), "--pooler", "max", "--precision", "fp32"]) == 0
    assert (tmp_path / "python.npy").read_bytes() == (tmp_path / "cli.npy").read_bytes()
    expected = Embedder(Recipe(model=str(tiny_bert_dir), pooler="max")).encode(TEXTS)  # [4, 32]
    assert np.abs(run.vectors - expected).max() <= 1e-6 and run.ids.tolist() == [0, 1, 2, 3]

    memory = bertlens.embed(TEXTS, **fp32)
    assert np.array_equal(memory.vectors, run.vectors) and memory.ids.tolist() == [0, 1, 2, 3]
    memory.save(tmp_path / "saved.npy")
    assert (tmp_path / "saved.npy").read_bytes() == (tmp_path / "cli.npy").read_bytes()
    assert main(["embed", str(texts_file), "--out", str(tmp_path / "cli.parquet"), "--quiet", "--model",
                 str(tiny_bert_dir), "--pooler", "max", "--precision", "fp32"]) == 0  # fmt: skip
    bertlens.embed(str(texts_file), **fp32).save(tmp_path / "saved.parquet")
    assert pq.read_table(tmp_path / "saved.parquet").equals(pq.read_table(tmp_path / "cli.parquet"))
    assert memory.to_arrow().num_rows == 4 and "4 x 32" in memory._repr_html_()


def test_skipped_empty_texts_keep_their_positions(tiny_bert_dir, tmp_path):
    """empty='skip' drops blank texts; the ids are the list positions of those kept, and save(.npy) writes the ids
    file beside the vectors as the command does."""
    run = bertlens.embed(["one", "  ", "three"], model=str(tiny_bert_dir), empty="skip", precision="fp32")
    assert run.ids.tolist() == [0, 2] and run.vectors.shape == (2, 32)
    assert "1 empty texts skipped" in run.notes()
    run.save(tmp_path / "v.npy")
    assert np.load(tmp_path / "v.ids.npy").tolist() == [0, 2]


@pytest.mark.parametrize(
    ("call", "argv", "python", "shell"),
    [
        ({"shard_size": 0}, ["--shard-size", "0"], "shard_size must be at least 1", "--shard-size must be at least 1"),
        ({"empty": "drop"}, ["--empty", "drop"], "empty must be one of error, skip, keep", "--empty"),
        ({"field": "a", "column": "b"}, ["--field", "a", "--column", "b"], "field and column say", "--field and --column"),
        ({"backend": "onnx", "pooler": "cls"}, ["--backend", "onnx", "--pooler", "cls"],
         "backend onnx runs the recipe baked into the export; leave out pooler",
         "--backend onnx runs the recipe baked into the export; leave out --pooler"),
        ({"engine": "ray", "backend": "onnx"}, ["--engine", "ray", "--backend", "onnx"],
         "engine ray runs the PyTorch backend", "--engine ray runs the PyTorch backend"),
    ],
)  # fmt: skip
def test_a_bad_value_is_refused_in_each_callers_words_before_any_model(
    no_model_loads, capsys, texts_file, tmp_path, call, argv, python, shell
):
    with pytest.raises(bertlens.BertlensError, match="^" + python):
        bertlens.embed(str(texts_file), **call)
    assert main(["embed", str(texts_file), "--out", str(tmp_path / "v.npy"), *argv]) == 1
    assert shell in capsys.readouterr().err
    assert not (tmp_path / "v.npy").exists()


def test_inputs_that_are_not_texts_and_unknown_keywords(no_model_loads, tmp_path, capsys):
    with pytest.raises(bertlens.BertlensError, match="^input must be a file path or a list of strings"):
        bertlens.embed(["fine", 3])
    with pytest.raises(bertlens.BertlensError, match="^input is required"):
        bertlens.embed()
    with pytest.raises(bertlens.BertlensError, match="unknown option 'pooling'"):
        bertlens.embed(["a"], pooling="mean")
    with pytest.raises(bertlens.BertlensError, match="^the recipe has prompts .* say which these texts are with role"):
        bertlens.embed(["a"], query_prompt="query: ")
    assert main(["embed", "a.txt", "b.txt", "--out", str(tmp_path / "v.npy")]) == 1
    assert "unexpected 'b.txt': bertlens embed takes one INPUT and flags" in capsys.readouterr().err
    assert main(["embed", "--out", str(tmp_path / "v.npy")]) == 1
    assert "--input is required" in capsys.readouterr().err
