"""recommend on a user CSV with a tiny model: five decisions with evidence, a recipe `Embedder` loads, a
long-text strategy for long texts, the domain step saying what it could not measure, the fine-tuning rule,
and a rerun that resumes from the finished steps."""

from __future__ import annotations

import csv
import json

import numpy as np

import bertlens.experiments.recommend as recommend
from bertlens.embedding.embedder import Embedder
from bertlens.experiments.recommend import FROZEN, TUNE, fine_tune_choice, run_recommend
from bertlens.reports.recommend import write_outputs
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import load_user_task
from tests.conftest import DATA


def _csv(path, texts, labels):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows(zip(texts, labels, strict=True))
    return load_user_task(path, kind="classification", text_cols=(0,), label_col=1, folds=5, seed=0)


def test_fine_tune_choice_follows_the_measured_difference():
    assert fine_tune_choice(np.array([0.05, 0.06, 0.04]), 200) == (TUNE, "measured")
    assert fine_tune_choice(np.array([-0.02, 0.0]), 5000) == (FROZEN, "measured")
    choice, confidence = fine_tune_choice(np.array([0.03, -0.01]), 200)
    assert choice == FROZEN and confidence.startswith("rule of thumb")
    assert fine_tune_choice(np.array([0.03, -0.01]), 5000)[0] == TUNE


def test_recommend_on_200_labelled_rows(tiny_bert_dir, tmp_path, monkeypatch):
    lines = (DATA / "sst2" / "train.txt").read_text().splitlines()[:200]
    task = _csv(tmp_path / "d.csv", [ln.split(" ", 1)[1] for ln in lines], [ln[0] for ln in lines])
    result = run_recommend(task, str(tiny_bert_dir), tmp_path / "out", budget_minutes=10)
    steps = [d.step for d in result.decisions]
    assert steps == ["text length", "domain", "representation", "frozen or fine-tuned", "latency"]
    assert all(d.evidence and d.rule and d.confidence for d in result.decisions)
    domain = result.decisions[1]
    assert "could not" in domain.confidence or "cannot be measured" in domain.confidence  # no masked-LM head
    tuned = result.decisions[3]
    assert tuned.decision in (TUNE, FROZEN) and "paired difference" in tuned.evidence
    paths = write_outputs(result, tmp_path / "out")
    Embedder(Recipe.load(paths["recipe"])).encode(["a recipe users can embed with"])
    assert "<table>" in paths["html"].read_text() and "## Decisions" in paths["report"].read_text()

    def no_more_sweeps(*args, **kwargs):
        raise AssertionError("a finished step ran again")

    monkeypatch.setattr(recommend, "run_sweep", no_more_sweeps)
    monkeypatch.setattr(recommend, "run_compare", no_more_sweeps)
    again = run_recommend(task, str(tiny_bert_dir), tmp_path / "out", budget_minutes=10)
    assert [d.decision for d in again.decisions[:4]] == [d.decision for d in result.decisions[:4]]


def test_long_texts_get_a_long_text_strategy(tiny_bert_dir, tmp_path):
    rng = np.random.default_rng(0)
    words = ["film", "story", "actor", "plot", "scene", "music", "great", "dull"]
    texts = [" ".join(rng.choice(words, 400)) for _ in range(30)]
    task = _csv(tmp_path / "long.csv", texts, [i % 2 for i in range(30)])
    from bertlens.encoding.encoder import Encoder

    decision = recommend.step_lengths(task, Encoder(str(tiny_bert_dir)), 0)
    assert "windows" in decision.decision and decision.recipe_changes == {"long_text": "windows:mean"}
    assert "100.0% over the model's limit" in decision.evidence
    json.dumps(decision.recipe_changes)
