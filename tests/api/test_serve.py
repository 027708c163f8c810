"""`bertlens.serve(...)` builds the server `bertlens serve` runs: its app answers as the Embedder embeds, and its
checks (port, key, several recipes) come before any model loads, in Python's words."""

from __future__ import annotations

import numpy as np
import pytest

import bertlens
from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe

pytest.importorskip("fastapi", reason="the serve extra is not installed")


def test_the_app_answers_with_the_recipes_vectors(tiny_bert_dir):
    from fastapi.testclient import TestClient

    server = bertlens.serve(model=str(tiny_bert_dir), pooler="max", precision="fp32")
    assert "serving" in server.banner and "POST /v1/embeddings" in server.banner
    with TestClient(server.app) as client:
        answer = client.post("/v1/embeddings", json={"input": ["a cat", "the mat"]}).json()
    got = np.array([row["embedding"] for row in answer["data"]])  # [2, 32]
    expected = Embedder(Recipe(model=str(tiny_bert_dir), pooler="max")).encode(["a cat", "the mat"])
    assert np.abs(got - expected).max() < 1e-5


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"port": 0}, "port must be between 1 and 65535"),
        ({"host": "0.0.0.0"}, "serving on 0.0.0.0 without api_key"),
        ({"api_key": " "}, "api_key is empty"),
        ({"max_wait_ms": -1.0}, "max_wait_ms must be >= 0"),
        ({"workers": 0}, "workers must be at least 1"),
        ({"long_text_policy": "cut"}, "long_text_policy must be one of truncate, refuse"),
        ({"recipe": ["a/r.json", "b/r.json"]}, "two recipe files are named 'r'"),
        ({"recipe": ["a/x.json", "b/y.json"], "pooler": "cls"}, "pooler would change every recipe"),
    ],
)
def test_bad_values_are_refused_before_any_model(monkeypatch, no_model_loads, call, message):
    monkeypatch.delenv("BERTLENS_API_KEY", raising=False)
    with pytest.raises(bertlens.BertlensError, match=message):
        bertlens.serve(**call)
