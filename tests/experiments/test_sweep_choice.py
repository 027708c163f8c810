"""The choice keeps the model's own reading unless the choosing data says the move is better."""

from __future__ import annotations

import json

import numpy as np

from bertlens.experiments.sweep.choice import prefer_own
from bertlens.models import own_pooler, resolve_model

NAMES = ["mean/L6", "attention/L6", "cls/L3"]


def test_a_best_tied_with_the_models_own_reading_gives_way_to_it():
    rng = np.random.default_rng(0)
    own = rng.uniform(0.4, 0.8, 150)  # per-query nDCG@10 of the choosing queries
    close = own + rng.normal(0.005, 0.05, 150)  # a hair better on average: noise
    index, why = prefer_own([1, 0, 2], NAMES, "mean/L6", np.stack([own, close, own - 0.2]), None, "ndcg@10", 0)
    assert index == 0 and "tied there with the model's own reading mean/L6" in why and "kept" in why


def test_a_clearly_better_candidate_moves_the_choice_and_says_by_how_much():
    rng = np.random.default_rng(1)
    own = rng.uniform(0.4, 0.8, 150)
    better = own + 0.08 + rng.normal(0, 0.02, 150)
    index, why = prefer_own([1, 0, 2], NAMES, "mean/L6", np.stack([own, better, own]), None, "ndcg@10", 0)
    assert index == 1 and why.startswith("; better than the model's own reading mean/L6 by +0.07")  # 0.08 - noise


def test_without_the_default_or_its_evidence_the_order_stands():
    outputs = np.zeros((3, 10))
    assert prefer_own([2, 0, 1], NAMES, "max/L6", outputs, None, "ndcg@10", 0) == (2, "")  # not a candidate
    assert prefer_own([2, 0, 1], NAMES, "mean/L6", None, None, "ndcg@10", 0) == (2, "")  # no choosing outputs
    assert prefer_own([0, 1], NAMES, "mean/L6", outputs, None, "ndcg@10", 0) == (0, "")  # it is the best already
    labels = np.array([0, 1] * 20)
    right, wrong = labels.copy(), 1 - labels
    assert prefer_own([1, 0], NAMES, "mean/L6", np.stack([wrong, right]), labels, "accuracy", 0)[0] == 1


def test_the_models_own_pooling_is_read_from_its_sentence_transformers_config(
    tmp_path, default_model_dir, tiny_bert_dir
):
    assert own_pooler(resolve_model("default")) == "mean"  # all-MiniLM-L6-v2 was trained with mean pooling
    assert own_pooler(resolve_model(str(tiny_bert_dir))) == "mean"  # no sentence-transformers config: mean
    import shutil

    shutil.copytree(tiny_bert_dir, tmp_path / "m")
    (tmp_path / "m" / "modules.json").write_text(json.dumps([{"idx": 1, "path": "1_Pooling", "type": "x.Pooling"}]))
    (tmp_path / "m" / "1_Pooling").mkdir()
    (tmp_path / "m" / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    assert own_pooler(resolve_model(str(tmp_path / "m"))) == "cls"
