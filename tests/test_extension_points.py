"""Where each kind of change goes (docs/architecture.md), shown by making one: a toy pooler, a toy task kind and a
toy server route, each added only where the architecture says (the tables patched here are the files it takes).

- a pooler:     2 files: representation/choices.py (POOLER_READS: what it reads), representation/poolers.py (POOLERS)
- a task kind:  1 file:  tasks/kinds.py (KINDS), when its protocols and loader exist already
- a route:      1 file:  serving/app.py (ROUTES); the docstring, the banner and the guide's table follow from it
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from fastapi import Request

from bertlens.embedding.embedder import Embedder
from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.representation import choices, poolers
from bertlens.representation.recipe import Recipe
from bertlens.serving import app as app_module
from bertlens.tasks import kinds
from bertlens.tasks.loaders import Split, TaskData
from tests.conftest import REPO

TEXTS = [f"{w} number {i}" for i, w in enumerate(["cats", "rain", "code", "tea"] * 18)]


def min_pool(states, mask, weights=None):
    """Element-wise minimum over masked-in tokens (the toy pooler)."""
    blocked = ~mask.unsqueeze(-1)  # [B, T, 1]
    pooled = states.masked_fill(blocked, float("inf")).amin(dim=-2)  # [..., B, H]
    return torch.where(torch.isfinite(pooled), pooled, torch.zeros_like(pooled))


def test_a_pooler_is_two_table_entries(monkeypatch, tiny_bert_dir, tmp_path):
    monkeypatch.setitem(choices.POOLER_READS, "min", ())  # 1: representation/choices.py
    monkeypatch.setitem(poolers.POOLERS, "min", poolers.Pooler(min_pool, linear=False))  # 2: representation/poolers.py
    vectors = Embedder(Recipe(model=str(tiny_bert_dir), pooler="min")).encode(TEXTS[:3])
    assert vectors.shape == (3, 32) and np.isfinite(vectors).all()
    task = TaskData("toy", "classification", {"all": Split(tuple(TEXTS), None, np.arange(len(TEXTS)) % 2)}, folds=2)
    result = run_sweep(task, str(tiny_bert_dir), cache_dir=tmp_path, config=SweepConfig(poolers=("min",), resamples=20))
    assert result.recommended.pooler == "min"  # the only pooler swept: every candidate, mixes included, is a min


def test_a_task_kind_is_one_table_entry(monkeypatch, tiny_bert_dir, tmp_path):
    toy = kinds.TaskKind("topics", False, kinds.CLASS, "accuracy", ("probe",), "classification", True)
    monkeypatch.setitem(kinds.KINDS, "topics", toy)  # 1: tasks/kinds.py
    task = TaskData("toy", "topics", {"all": Split(tuple(TEXTS), None, np.arange(len(TEXTS)) % 3)}, folds=2)
    assert task.kind is toy and "topics" in kinds.user_kinds()
    result = run_sweep(
        task, str(tiny_bert_dir), cache_dir=tmp_path, config=SweepConfig(poolers=("mean",), resamples=20)
    )
    assert list(result.protocols) == ["probe"] and result.main.metric == "accuracy"
    with pytest.raises(TypeError, match="compared with the string"):
        assert task.kind == "topics"  # dispatch on names is what the table replaces: it fails loudly


def test_a_route_is_one_table_entry(monkeypatch, tiny_bert_dir):
    from fastapi.testclient import TestClient

    def ping(served):
        async def work(request: Request):
            return {"recipes": list(served.services)}

        return work

    route = app_module.Route("GET", "/ping", False, "which recipes answer (a toy route)", ping)
    monkeypatch.setattr(app_module, "ROUTES", (*app_module.ROUTES, route))  # 1: serving/app.py
    with TestClient(app_module.create_app(Embedder(Recipe(model=str(tiny_bert_dir))))) as client:
        assert client.get("/ping").json() == {"recipes": ["bertlens"]}
    assert app_module.route_banner().endswith("/metrics /ping") and "`GET /ping`" in app_module.route_table()


def _between(text: str, start: str, end: str) -> str:
    assert start in text and end in text, f"the markers {start} ... {end} are gone"
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def test_the_docstring_and_the_guide_list_the_routes_of_the_table():
    docstring = _between(app_module.__doc__, "<!-- routes -->", "<!-- /routes -->")
    assert docstring.splitlines() == app_module.route_lines()
    readme = _between(
        (REPO / "docs" / "guide.md").read_text(),
        "<!-- routes: src/bertlens/serving/app.py ROUTES -->",
        "<!-- /routes -->",
    )
    assert readme == app_module.route_table(), (
        "regenerate with: python -c 'from bertlens.serving.app import route_table; print(route_table())'"
    )


def test_every_backend_name_has_its_builder_and_every_mixer_its_function():
    from bertlens.embedding.backends import BUILDERS
    from bertlens.representation.mixers import MIXER_FUNCTIONS

    assert tuple(BUILDERS) == choices.BACKENDS and set(choices.SERVED_BACKENDS) <= set(BUILDERS)
    assert set(MIXER_FUNCTIONS) == set(choices.MIXERS)
    assert set(poolers.POOLERS) == set(choices.POOLER_READS)
