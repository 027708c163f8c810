"""`bertlens sweep --model A --model B` (issue #74) on every kind of task: one leaderboard across models, each
model's price and own sweep, the choice as a recipe `embed` reproduces."""

import json

import numpy as np
import pytest

from bertlens.cli.main import main
from bertlens.representation.recipe import Recipe
from tests.cli.test_sheets import emobank_rows, tags_rows, write_csv
from tests.conftest import DATA
from tests.tasks.test_retrieval import DOCS, QRELS, QUERIES, write_beir


def data_of(kind: str, tmp_path) -> list[str]:
    """The data flags of a small task of `kind`."""
    if kind == "classification":
        return ["--task", "trec", "--data-dir", str(DATA), "--max-examples", "200"]
    if kind == "similarity":
        return ["--task", "stsb", "--data-dir", str(DATA), "--max-examples", "200"]
    if kind == "regression":
        path = write_csv(tmp_path / "v.csv", ("text", "V"), emobank_rows(200))
        return ["--data", str(path), "--text-col", "text", "--label-col", "V"]
    if kind == "multi_label":
        path = write_csv(tmp_path / "tags.csv", ("text", "tags"), tags_rows(200))
        return ["--data", str(path), "--text-col", "text", "--label-col", "tags", "--label-sep", "|"]
    root = write_beir(tmp_path / "beir", DOCS, QUERIES, QRELS)
    return ["--data", str(root), "--protocols", "cosine,late_interaction", "--prompts", "e5=query: |passage: "]


@pytest.mark.parametrize("kind", ["classification", "similarity", "regression", "multi_label", "retrieval"])
def test_several_models_give_one_leaderboard_prices_and_a_recipe(
    tmp_path, tiny_bert_dir, second_tiny_bert_dir, capsys, kind
):
    models = [str(tiny_bert_dir), str(second_tiny_bert_dir)]
    out = tmp_path / "out"
    argv = ["sweep", *data_of(kind, tmp_path), "--model", models[0], "--model", models[1], "--poolers", "mean,cls",
            "--resamples", "100", "--bank-dtype", "float32", "--quiet", "--cache-dir", str(tmp_path / "cache"),
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    said = capsys.readouterr().err
    assert "recommended" in said and "texts/s" in said
    results = json.loads((out / "results.json").read_text())
    assert [m["model"] for m in results["models"]] == models
    assert sum(m["chosen"] for m in results["models"]) == 1
    assert {row["model"] for row in results["rows"]} == set(models)
    assert any(r["tied_with_best"] for r in results["leaderboard"])
    own = {(r["model"], r["candidate"]): r for r in results["rows"] if r["tied_with_best_across_models"] is not None}
    for row in results["leaderboard"]:  # the same resamples: each model's figures, only the tie set is across models
        mine = own[(row["model"], row["candidate"])]
        assert (row["value"], row["ci_low"], row["ci_high"]) == pytest.approx(
            (mine["value"], mine["ci_low"], mine["ci_high"]), abs=1e-6
        )
    for model in results["models"]:
        assert model["texts_per_s"] > 0 and model["ms_one_text"] > 0 and model["bytes_per_vector"] == 4 * model["dim"]
    recipe = Recipe.load(out / "recipe.json")
    assert recipe.model == results["choice"]["model"] in models
    assert (out / "quality-speed.png").stat().st_size > 0
    report = (out / "report.md").read_text()
    assert "Leaderboard across models" in report and "Passed over" in report or "Rule:" in report
    for folder in (out / "models").iterdir():
        assert (folder / "report.md").is_file() and (folder / "recipe.json").is_file()
    if kind == "retrieval":
        assert any("e5" in r["candidate"] for r in results["rows"])  # each model's prompts
        assert any(r["protocol"] == "late_interaction" for r in results["rows"])
    options = json.loads((out / "options.json").read_text())
    assert options["model"] == models  # --config repeats the run across the same models


def test_the_chosen_recipe_embeds_as_the_recipe_says(tmp_path, tiny_bert_dir, second_tiny_bert_dir, capsys):
    out = tmp_path / "out"
    argv = ["sweep", *data_of("classification", tmp_path), "--model", str(tiny_bert_dir), "--model",
            str(second_tiny_bert_dir), "--poolers", "mean", "--resamples", "100", "--quiet", "--out", str(out),
            "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    assert main(argv) == 0
    texts = tmp_path / "t.txt"
    texts.write_text("what is the capital of France ?\nwho wrote Hamlet ?\n")
    assert main(["embed", str(texts), "--recipe", str(out / "recipe.json"), "--out", str(tmp_path / "v.npy"),
                 "--quiet"]) == 0  # fmt: skip
    vectors = np.load(tmp_path / "v.npy")
    assert vectors.shape[0] == 2 and np.isfinite(vectors).all()


def test_a_budget_no_model_meets_is_one_line_and_exit_1(tmp_path, tiny_bert_dir, second_tiny_bert_dir, capsys):
    argv = ["sweep", *data_of("classification", tmp_path), "--model", str(tiny_bert_dir), "--model",
            str(second_tiny_bert_dir), "--poolers", "mean", "--resamples", "100", "--quiet", "--max-latency-ms",
            "0.001", "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no model meets the budget (at most 0.001 ms for one text)" in err
    assert not (tmp_path / "o" / "recipe.json").exists()
