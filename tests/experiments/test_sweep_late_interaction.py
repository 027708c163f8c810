"""The retrieval sweep's late_interaction protocol: MaxSim rows per layer beside the pooled ones, with intervals;
its pick's multi-vector recipe, indexed into LanceDB and searched, gives the sweep's nDCG@10."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.experiments.index import run_index
from bertlens.experiments.search import search_store
from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.metrics.ranking import ranking_metrics
from bertlens.reports.sweep import LATE_RECIPE, write_outputs
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import retrieval_task
from bertlens.tasks.retrieval import load_beir, query_split
from tests.tasks.test_retrieval import write_beir

TOPICS = ["wings and lift at high speed", "engine thrust, fuel flow", "rain, weather; storms", "bread & baking ovens"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory, tiny_bert_dir):
    tmp = tmp_path_factory.mktemp("late")
    docs = [(f"d{i}", "", f"note {i}: {TOPICS[i % 4]} (part {i // 4})") for i in range(40)]
    queries = [(f"q{i}", f"{TOPICS[i % 4].split()[0]} {i}?") for i in range(16)]
    qrels = [(f"q{i}", f"d{j}", 1) for i in range(16) for j in range(i % 4, 40, 8)]
    root = write_beir(tmp / "c", docs, queries, qrels)
    task = retrieval_task("tiny", load_beir(root), str(root))
    config = SweepConfig(poolers=("mean", "cls"), resamples=50, protocols=("cosine", "late_interaction"))
    result = run_sweep(task, str(tiny_bert_dir), cache_dir=tmp / "cache", config=config)
    write_outputs(result, tmp / "out")
    return task, result, tmp


def test_late_interaction_rows_per_layer_sit_beside_the_pooled_rows_with_intervals(swept):
    _, result, tmp = swept
    late = result.protocols["late_interaction"]
    names = [c.name for c in late.candidates]
    assert names[:3] == ["tokens/L0", "tokens/L1", "tokens/L2"]  # the tiny model's layers, as they are
    assert any("no-punct" in n for n in names) and any("+q32" in n for n in names)
    assert np.all(late.test.low <= late.test.value) and np.all(late.test.value <= late.test.high)
    rows = json.loads((tmp / "out" / "results.json").read_text())["rows"]
    assert {r["protocol"] for r in rows} >= {"cosine", "late_interaction"}
    assert (
        "is better than" in result.late_interaction.comparison
        or "tied" in result.late_interaction.comparison
        or ("worse" in result.late_interaction.comparison)
    )
    assert result.late_interaction.comparison in result.notes
    assert result.recommended.tokens is None  # the recommendation stays the pooled one; the pick is a second recipe


def test_the_multi_vector_recipe_through_lancedb_gives_the_sweeps_ndcg(swept, tmp_path):
    task, result, tmp = swept
    recipe = Recipe.load(tmp / "out" / LATE_RECIPE)
    assert recipe.multi_vector and recipe.layers == result.late_interaction.candidate.layers
    from bertlens.stores.lance import LanceStore

    collection = task.collection
    store = LanceStore(tmp_path / "store")
    embedder = Embedder(recipe)
    run_index({str(i): text for i, text in enumerate(collection.documents)}, embedder, store)
    assert store.record().multi_vector
    split = query_split(collection, result.seed)
    found = search_store(store, embedder, [collection.queries[q] for q in split.test], 100)
    ranked = np.array([[int(hit.doc_id) for hit in hits] for hits in found])  # [Q, 40]
    ndcg = ranking_metrics(ranked, list(split.test_judgements))["ndcg@10"].mean()
    late = result.protocols["late_interaction"]
    names = [c.name for c in late.candidates]
    assert abs(ndcg - late.test.value[names.index(result.late_interaction.candidate.name)]) <= 1e-4


def test_above_the_full_search_size_maxsim_re_ranks_the_pooled_top_100_and_says_so(swept, monkeypatch, tiny_bert_dir):
    """Re-ranking mode on a corpus of 40 documents: the first stage's top 100 holds every document, so the
    re-ranked rows score what the full search scored, and the description says which mode ran."""
    import bertlens.experiments.sweep.late_interaction as late

    task, full, tmp = swept
    monkeypatch.setattr(late, "FULL_SEARCH_DOCUMENTS", 10)
    config = SweepConfig(poolers=("mean", "cls"), resamples=50, protocols=("cosine", "late_interaction"))
    result = run_sweep(task, str(tiny_bert_dir), cache_dir=tmp / "cache", config=config)
    reranked, searched = result.protocols["late_interaction"], full.protocols["late_interaction"]
    assert "re-ranks the top 100 of the recommended pooled reading" in reranked.description
    assert "MaxSim over the whole corpus" in searched.description
    np.testing.assert_allclose(reranked.test.value, searched.test.value, atol=1e-9)


def test_a_re_ranking_pick_is_deployed_as_it_was_scored(swept, monkeypatch, tiny_bert_dir, tmp_path):
    """Above the full-search size the pick's recipe carries the pooled first stage: `index` keeps both vectors,
    `search` re-ranks the first stage's top `rerank_depth` by MaxSim, and gives the sweep's nDCG@10."""
    import bertlens.experiments.sweep.late_interaction as late
    from bertlens.stores.lance import LanceStore

    task, _, tmp = swept
    monkeypatch.setattr(late, "FULL_SEARCH_DOCUMENTS", 10)
    monkeypatch.setattr(late, "RERANK_DEPTH", 12)  # of 40 documents: a real re-ranking
    config = SweepConfig(poolers=("mean", "cls"), resamples=50, protocols=("cosine", "late_interaction"))
    result = run_sweep(task, str(tiny_bert_dir), cache_dir=tmp / "cache", config=config)
    write_outputs(result, tmp_path / "out")
    recipe = Recipe.load(tmp_path / "out" / LATE_RECIPE)
    pooled = Recipe.load(tmp_path / "out" / "recipe.json")
    assert recipe.first_stage == pooled.replace(dimension_loss=None) and recipe.rerank_depth == 12

    collection = task.collection
    store = LanceStore(tmp_path / "store")
    embedder = Embedder(recipe)
    run_index({str(i): text for i, text in enumerate(collection.documents)}, embedder, store)
    assert store.record().first_stage_dim == embedder.first_stage.dim
    split = query_split(collection, result.seed)
    found = search_store(store, embedder, [collection.queries[q] for q in split.test], 100)
    assert {len(hits) for hits in found} == {12}  # only the first stage's documents are ranked
    ranked = np.array([[int(hit.doc_id) for hit in hits] for hits in found])  # [Q, 12]
    ndcg = ranking_metrics(ranked, list(split.test_judgements))["ndcg@10"].mean()
    rows = result.protocols["late_interaction"]
    names = [c.name for c in rows.candidates]
    assert abs(ndcg - rows.test.value[names.index(result.late_interaction.candidate.name)]) <= 1e-4


def test_a_token_bank_larger_than_the_free_disk_is_refused_before_encoding(monkeypatch, tmp_path):
    from collections import namedtuple

    import bertlens.experiments.sweep.late_interaction as late
    from bertlens.errors import BertlensError

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(late.shutil, "disk_usage", lambda path: usage(10**12, 10**12 - 10**8, 10**8))
    with pytest.raises(BertlensError, match=r"needs 2\.0 GB in .* and 0\.1 GB is free; ask fewer layers"):
        late._check_disk(tmp_path, 2 * 10**9)
