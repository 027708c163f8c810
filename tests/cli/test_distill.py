"""`bertlens distill` from the command line: a classification evaluation with paired intervals, and the student's
recipe accepted by `embed` (the vectors `embed` writes are the student's)."""

from __future__ import annotations

import json

import numpy as np

from bertlens.cli.main import main
from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe
from tests.conftest import DATA


def test_distill_cli_evaluates_and_its_recipe_embeds(tiny_bert_dir, tmp_path, capsys):
    texts = tmp_path / "texts.txt"
    lines = [line.split(" ", 1)[1].strip() for line in (DATA / "sst2" / "train.txt").read_text().splitlines()[:300]]
    texts.write_text("\n".join(lines) + "\n")
    out = tmp_path / "student"
    argv = ["distill", "--teacher", str(tiny_bert_dir), "--student", "layers:1", "--texts", str(texts)]
    argv += ["--eval-task", "trec", "--data-dir", str(DATA), "--epochs", "1", "--out", str(out), "--quiet"]
    argv += ["--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "trec test accuracy" in err and "of teacher" in err
    record = json.loads((out / "distill.json").read_text())
    (evaluation,) = record["evaluation"]
    assert evaluation["task"] == "trec" and evaluation["metric"] == "accuracy"
    for side in ("teacher", "student"):
        value, low, high = evaluation[side]
        assert 0 < low <= value <= high < 1
    assert evaluation["difference"][1] <= evaluation["difference"][0] <= evaluation["difference"][2]
    assert record["projection"] is False and record["student"] == "layers:0"  # one layer of two: the first
    assert (
        main(["embed", str(texts), "--recipe", str(out / "recipe.json"), "--out", str(tmp_path / "v.npy"), "--quiet"])
        == 0
    )
    written = np.load(tmp_path / "v.npy")
    np.testing.assert_allclose(written, Embedder(Recipe.load(out / "recipe.json")).encode(lines), atol=1e-6)
