"""`bertlens longdoc` on a slice of the movie reviews with a tiny model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bertlens.cli.main import main
from bertlens.embedding.embedder import Embedder
from bertlens.encoding.chunking import parse_long_text
from bertlens.encoding.encoder import Encoder
from bertlens.features.bank import build_bank
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import load_catalog_task
from tests.conftest import DATA
from tests.reports.chromium import CHROMIUM, assert_report_renders


def test_longdoc_scores_every_strategy_with_speed(tmp_path, tiny_bert_dir):
    out = tmp_path / "ld"
    assert (
        main(
            [
                "longdoc",
                "--task",
                "movie_reviews",
                "--data-dir",
                str(DATA),
                "--model",
                str(tiny_bert_dir),
                "--max-length",
                "64",
                "--max-examples",
                "60",
                "--folds",
                "3",
                "--resamples",
                "100",
                "--strategies",
                "head,tail,head_tail:16,windows:mean,windows:max,hier:attention",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    data = json.loads((out / "results.json").read_text())
    rows = {r["strategy"]: r for r in data["rows"]}
    assert set(rows) == {"head", "tail", "head_tail:16", "windows:mean", "windows:max", "hier:attention"}
    assert rows["head"]["speed_vs_head"] == 1.0 and rows["windows:max"]["encoding_pass"] == "windows"
    assert all(0 <= r["ci_low"] <= r["accuracy"] <= r["ci_high"] <= 1 for r in rows.values())
    assert data["windows_per_document"] > 5  # reviews are far longer than 62 tokens
    if CHROMIUM:
        assert_report_renders(out / "report.html", "bertlens longdoc", ("strategy", "docs/s"), tmp_path, "longdoc")


def test_bad_strategy_is_one_line(tmp_path, tiny_bert_dir, capsys):
    code = main(
        [
            "longdoc",
            "--task",
            "movie_reviews",
            "--data-dir",
            str(DATA),
            "--model",
            str(tiny_bert_dir),
            "--strategies",
            "head,hier:lstm",
            "--out",
            str(tmp_path / "x"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 1 and "unknown chunk classifier 'hier:lstm'" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("strategy", ["windows:max", "windows:mean"])
def test_sweep_with_a_long_text_strategy_scores_what_its_recipe_embeds(tmp_path, tiny_bert_dir, strategy):
    """The bank built from windows and the recipe the sweep writes must give the same vectors per document."""
    out = tmp_path / "sw"
    args = [
        "sweep",
        "--task",
        "movie_reviews",
        "--data-dir",
        str(DATA),
        "--model",
        str(tiny_bert_dir),
        "--max-length",
        "64",
        "--max-examples",
        "60",
        "--folds",
        "3",
        "--poolers",
        "mean,max",
        "--long-text",
        strategy,
        "--resamples",
        "50",
        "--bank-dtype",
        "float32",
        "--out",
        str(out),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--quiet",
    ]
    assert main(args) == 0
    recipe = Recipe.load(out / "recipe.json")
    assert recipe.long_text == strategy and recipe.max_length == 64
    task = load_catalog_task(get_task("movie_reviews"), DATA, max_examples=60, seed=0)
    docs = task.all_texts()
    encoder = Encoder(str(tiny_bert_dir), max_length=64)
    bank = build_bank(
        encoder, docs, tmp_path / "cache", poolers=("mean", "max"), dtype="float32", long_text=parse_long_text(strategy)
    )  # the sweep's own cache entry: verified, not rebuilt
    for pooler in ("mean", "max"):
        single = Recipe(model=str(tiny_bert_dir), max_length=64, pooler=pooler, layers=(-1,), long_text=strategy)
        np.testing.assert_allclose(Embedder(single, encoder=encoder).encode(docs), bank.layer(pooler, 2), atol=1e-5)
