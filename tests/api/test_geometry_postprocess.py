"""`bertlens.geometry(...)` and `bertlens.postprocess(...)` are their commands: the same rows and files from Python
and from the shell, texts in memory read like a file's, bad values refused before any model loads."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import bertlens
from bertlens.cli.main import main
from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe

TEXTS = [f"a {w} film about {t}" for w in ("warm", "dull", "sharp", "flat", "kind") for t in ("cats", "rain", "war")]


def test_geometry_from_a_list_equals_the_command_on_the_file(tmp_path, tiny_bert_dir, capsys):
    corpus = tmp_path / "t.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    argv = ["geometry", "--texts", str(corpus), "--model", str(tiny_bert_dir), "--poolers", "mean,max"]
    assert main([*argv, "--out", str(tmp_path / "cli"), "--quiet"]) == 0, capsys.readouterr().err
    shape = bertlens.geometry(texts=TEXTS, model=str(tiny_bert_dir), poolers=["mean", "max"])
    as_json = json.loads(json.dumps(shape.rows()))  # tuples as lists, as results.json holds them
    assert as_json == json.loads((tmp_path / "cli" / "results.json").read_text())["rows"]
    assert len(shape.rows()) == 2 * 3 and shape.plot().axes and "<table>" in shape._repr_html_()
    assert (shape.save(tmp_path / "python")["plot"]).is_file()


def test_postprocess_fits_what_the_command_fits_and_embed_applies_it(tmp_path, tiny_bert_dir, capsys):
    corpus = tmp_path / "t.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    argv = ["postprocess", "--texts", str(corpus), "--model", str(tiny_bert_dir), "--steps", "center"]
    assert main([*argv, "--out", str(tmp_path / "cli"), "--quiet"]) == 0, capsys.readouterr().err
    fitted = bertlens.postprocess(texts=TEXTS, model=str(tiny_bert_dir), steps="center")
    paths = fitted.save(tmp_path / "python")
    python, cli = (load_file(d / "postprocess.safetensors") for d in (tmp_path / "python", tmp_path / "cli"))
    assert python.keys() == cli.keys() and all(torch.equal(python[k], cli[k]) for k in python)
    recipe = Recipe.load(paths["recipe"])
    centred = Embedder(recipe).encode(TEXTS)  # [15, 32]: the fitted centring applied by any embedder
    assert np.abs(centred.mean(axis=0)).max() < 1e-4 and fitted.rows()[0]["texts"] == len(TEXTS)


@pytest.mark.parametrize(
    ("command", "call", "message"),
    [
        ("geometry", {}, "give exactly one of texts or task"),
        ("geometry", {"texts": TEXTS, "task": "stsb"}, "give exactly one of texts or task"),
        ("geometry", {"texts": ["a", 3]}, "texts must be a file path or a list of strings"),
        ("geometry", {"texts": TEXTS, "max_texts": 1}, "max_texts must be at least 2"),
        ("geometry", {"texts": TEXTS, "poolers": ""}, "poolers names no pooler"),
        ("postprocess", {"texts": TEXTS, "steps": "whitten"}, "whitten"),
        ("postprocess", {"texts": TEXTS, "seed": -1}, "seed must be between 0"),
    ],
)
def test_bad_values_are_refused_before_any_model(no_model_loads, command, call, message):
    with pytest.raises(bertlens.BertlensError, match=message):
        getattr(bertlens, command)(**call)
