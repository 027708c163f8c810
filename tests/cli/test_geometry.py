"""`bertlens geometry` and `bertlens postprocess` end to end; whitening through a recipe."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bertlens.cli.main import main
from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe
from tests.conftest import DATA
from tests.reports.chromium import CHROMIUM, assert_report_renders


def test_geometry_on_stsb_writes_rows_with_alignment(tmp_path, tiny_bert_dir):
    out = tmp_path / "geo"
    assert (
        main(
            [
                "geometry",
                "--task",
                "stsb",
                "--data-dir",
                str(DATA),
                "--model",
                str(tiny_bert_dir),
                "--max-texts",
                "300",
                "--poolers",
                "cls,mean",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    data = json.loads((out / "results.json").read_text())
    assert len(data["rows"]) == 3 * 2 and {"alignment", "uniformity", "self_similarity"} <= set(data["rows"][0])
    assert (out / "geometry.png").stat().st_size > 0
    if CHROMIUM:
        assert_report_renders(out / "report.html", "bertlens geometry", ("layer", "pooler"), tmp_path, "geometry")


def test_postprocess_recipe_whitens_what_embed_writes(tmp_path, tiny_bert_dir, sts_sentences):
    fit_texts = tmp_path / "fit.txt"
    fit_texts.write_text("\n".join(sts_sentences[:300]) + "\n")
    out = tmp_path / "white"
    assert (
        main(
            [
                "postprocess",
                "--texts",
                str(fit_texts),
                "--steps",
                "whiten:16",
                "--model",
                str(tiny_bert_dir),
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    recipe = Recipe.load(out / "recipe.json")
    fitted = Embedder(recipe).encode(sts_sentences[:300]).astype(np.float64)
    assert fitted.shape == (300, 16)
    np.testing.assert_allclose(np.cov(fitted, rowvar=False, bias=True), np.eye(16), atol=1e-3)
    other = tmp_path / "other.txt"
    other.write_text("\n".join(sts_sentences[300:320]) + "\n")
    assert main(["embed", str(other), "--recipe", str(out / "recipe.json"), "--out", str(tmp_path / "v.npy")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), Embedder(recipe).encode(sts_sentences[300:320]), atol=1e-5)


def test_postprocess_on_too_few_texts_is_one_line(tmp_path, tiny_bert_dir, capsys):
    few = tmp_path / "few.txt"
    few.write_text("one\ntwo\nthree\n")
    code = main(
        ["postprocess", "--texts", str(few), "--model", str(tiny_bert_dir), "--out", str(tmp_path / "w"), "--quiet"]
    )
    err = capsys.readouterr().err.strip()
    assert code == 1 and "needs more than 32 fitting texts, got 3" in err and len(err.splitlines()) == 1


def test_sweep_scores_whitened_candidates_and_saves_the_fitted_whitening(tmp_path, tiny_bert_dir):
    out = tmp_path / "sw"
    assert (
        main(
            [
                "sweep",
                "--task",
                "stsb",
                "--data-dir",
                str(DATA),
                "--model",
                str(tiny_bert_dir),
                "--max-examples",
                "300",
                "--poolers",
                "cls,mean",
                "--postprocess-steps",
                "whiten",
                "--resamples",
                "50",
                "--out",
                str(out),
                "--cache-dir",
                str(tmp_path / "cache"),
                "--quiet",
            ]
        )
        == 0
    )
    data = json.loads((out / "results.json").read_text())
    names = {r["candidate"] for r in data["rows"] if r["protocol"] == "cosine"}
    assert "mean/L2+whiten" in names and "mean/L2" in names and "mean/scalar_mix+whiten" not in names
    recipe = Recipe.load(out / "recipe.json")
    if data["recommended"].endswith("+whiten"):  # the forced case is the next test
        assert (out / "postprocess.safetensors").is_file() and recipe.postprocess.endswith("postprocess.safetensors")
        assert Embedder(recipe).encode(["a test", "another"]).shape[0] == 2
    else:
        assert recipe.postprocess is None and not (out / "postprocess.safetensors").exists()


def test_a_recommended_whitened_candidate_is_saved_and_reproduces_its_score(tmp_path, tiny_bert_dir, monkeypatch):
    """Force the recommendation onto a whitened candidate: its fitted whitening must be saved next to the
    recipe, and embedding the test pairs with that recipe must give the score the sweep reported."""
    from bertlens.experiments.sweep import choice as sweep_module
    from bertlens.metrics.bootstrap import spearman
    from bertlens.metrics.geometry import row_cosine
    from bertlens.tasks.catalog import get_task
    from bertlens.tasks.loaders import load_catalog_task

    def choose_whitened(result, width, default=None, seed=0):
        return next(i for i, c in enumerate(result.candidates) if c.name == "mean/L2+whiten"), ""

    monkeypatch.setattr(sweep_module, "choose", choose_whitened)
    out = tmp_path / "sw"
    args = [
        "sweep",
        "--task",
        "stsb",
        "--data-dir",
        str(DATA),
        "--model",
        str(tiny_bert_dir),
        "--max-examples",
        "300",
        "--poolers",
        "mean",
        "--postprocess-steps",
        "whiten",
        "--resamples",
        "50",
        "--out",
        str(out),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--bank-dtype",
        "float32",
        "--quiet",
    ]
    assert main(args) == 0
    data = json.loads((out / "results.json").read_text())
    assert data["recommended"] == "mean/L2+whiten"
    assert (out / "postprocess.safetensors").is_file()
    recipe = Recipe.load(out / "recipe.json")
    assert recipe.postprocess == str((out / "postprocess.safetensors").resolve()) and recipe.layers == (2,)
    test = load_catalog_task(get_task("stsb"), DATA, max_examples=300, seed=0).splits["test"]
    embedder = Embedder(recipe)
    rho = float(
        spearman(row_cosine(embedder.encode(list(test.texts_a)), embedder.encode(list(test.texts_b))), test.targets)
    )
    reported = next(
        r["value"] for r in data["rows"] if r["protocol"] == "cosine" and r["candidate"] == "mean/L2+whiten"
    )
    assert rho == pytest.approx(reported, abs=1e-6)
