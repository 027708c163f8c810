"""A multi-vector index in LanceDB: one row per document holding its token vectors (float16); the in-process MaxSim
`search` runs gives LanceDB's own multi-vector scores and ranking; a CLI index + search with a multi-vector recipe
works end to end; what a multi-vector index cannot do is refused in one line before any work."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.cli.main import main
from bertlens.embedding.embedder import Embedder
from bertlens.experiments.index import run_index
from bertlens.representation.late_interaction import PackedTokens, maxsim
from bertlens.representation.recipe import Recipe
from tests.tasks.test_retrieval import write_beir

pytest.importorskip(
    "lancedb", reason="the stores extra is not installed: pip install -c constraints.txt -e '.[stores]'"
)

TOPICS = ["cats and kittens", "stock markets", "rain and weather", "football matches", "baking bread", "the moon"]
DOCUMENTS = {f"d{i}": f"a note about {TOPICS[i % 6]}, number {i}" for i in range(18)}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, tiny_bert_dir):
    from bertlens.stores.lance import LanceStore

    tmp = tmp_path_factory.mktemp("multi")
    recipe = Recipe(model=str(tiny_bert_dir), pooler="tokens", layers=(2,), precision="fp32", include_special=False)
    embedder = Embedder(recipe)
    store = LanceStore(tmp / "store")
    run_index(DOCUMENTS, embedder, store)
    return store, embedder, recipe.save(tmp / "recipe.json")


def test_in_process_maxsim_gives_lancedbs_own_scores_and_order(indexed):
    store, embedder, _ = indexed
    queries = embedder.for_queries().embed_tokens([f"tell me about {t}" for t in TOPICS])
    ours = store.search_tokens(queries, 18)
    native = store.search_tokens(queries, 18, native=True)
    for mine, theirs in zip(ours, native, strict=True):  # near-twin notes (number 3, 9, 15) tie within rounding
        theirs_by_id = {h.doc_id: h.score for h in theirs}
        assert len(mine) == len(theirs) == 18
        np.testing.assert_allclose([h.score for h in mine], [theirs_by_id[h.doc_id] for h in mine], atol=1e-3)
        assert [h.score for h in mine] == sorted((h.score for h in mine), reverse=True)
    documents = embedder.embed_tokens(list(DOCUMENTS.values()))  # float32; the store keeps float16
    stored = PackedTokens(documents.vectors.astype(np.float16), documents.offsets)
    direct = maxsim(queries, stored)[0]  # [18]
    assert [h.doc_id for h in ours[0][:3]] == [f"d{i}" for i in np.argsort(-direct, kind="stable")[:3]]
    assert store.record().multi_vector and store.count() == 18


def test_cli_index_and_search_with_a_multi_vector_recipe(indexed, tmp_path, capsys):
    _, _, recipe = indexed
    root = write_beir(tmp_path / "c", [(k, "", v) for k, v in DOCUMENTS.items()], [("q0", "cats")], [("q0", "d0", 1)])
    assert main(["index", "--data", str(root), "--recipe", str(recipe), "--out", str(tmp_path / "s"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["search", "--index", str(tmp_path / "s"), "--query", "kittens and cats", "--top-k", "3"]) == 0
    shown = capsys.readouterr().out
    assert "cats and kittens" in shown


def test_ann_is_refused_for_a_multi_vector_recipe_before_any_work(indexed, tmp_path, capsys):
    _, _, recipe = indexed
    root = write_beir(tmp_path / "c", [(k, "", v) for k, v in DOCUMENTS.items()], [("q0", "cats")], [("q0", "d0", 1)])
    code = main(["index", "--data", str(root), "--recipe", str(recipe), "--out", str(tmp_path / "s"), "--ann"])
    err = capsys.readouterr().err
    assert code == 1 and "--ann builds an approximate index of one vector per row" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "s").exists()


@pytest.fixture(scope="module")
def first_stage_index(tmp_path_factory, tiny_bert_dir):
    from bertlens.stores.lance import LanceStore

    tmp = tmp_path_factory.mktemp("rerank")
    pooled = Recipe(model=str(tiny_bert_dir), pooler="mean", layers=(1,), precision="fp32", query_prompt="q: ")
    recipe = Recipe(
        model=str(tiny_bert_dir), pooler="tokens", layers=(2,), precision="fp32", first_stage=pooled, rerank_depth=5
    )
    embedder = Embedder(recipe)
    store = LanceStore(tmp / "store")
    run_index(DOCUMENTS, embedder, store)
    return store, embedder, recipe.save(tmp / "recipe.json")


def test_a_first_stage_index_re_ranks_the_pooled_top_depth_by_maxsim(first_stage_index):
    """Each query's 5 documents of highest pooled cosine (its own prompt), ranked by MaxSim over their float16
    tokens: the same documents, order and scores as computed here directly."""
    from bertlens.experiments.search import search_store

    store, embedder, _ = first_stage_index
    assert store.record().first_stage_dim == 32 and store.record().multi_vector
    queries = [f"tell me about {t}" for t in TOPICS]
    found = search_store(store, embedder, queries, 10)
    pooled = embedder.first_stage.encode(list(DOCUMENTS.values()))  # [18, 32]
    asked = embedder.first_stage.encode([f"q: {q}" for q in queries])  # [6, 32]
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
    cosines = unit(asked) @ unit(pooled).T  # [6, 18]
    tokens = embedder.embed_tokens(list(DOCUMENTS.values()))
    stored = PackedTokens(tokens.vectors.astype(np.float16), tokens.offsets)
    query_tokens = embedder.for_queries().embed_tokens(queries)
    ids = list(DOCUMENTS)
    for q, hits in enumerate(found):
        first = np.argsort(-cosines[q], kind="stable")[:5]  # the first stage
        scores = maxsim(PackedTokens.from_list([query_tokens.of(q)]), stored)[0][first]  # [5]
        order = first[np.lexsort((first, -scores))]
        assert [h.doc_id for h in hits] == [ids[i] for i in order]  # 5, not 10: only the first stage is ranked
        np.testing.assert_allclose([h.score for h in hits], np.sort(scores)[::-1], rtol=1e-5)


def test_a_first_stage_recipe_must_match_the_index(first_stage_index, tiny_bert_dir):
    from bertlens.errors import OptionError
    from bertlens.experiments.search import SearchIndex

    store, embedder, _ = first_stage_index
    other = embedder.recipe.replace(first_stage=embedder.recipe.first_stage.replace(pooler="cls"))
    with pytest.raises(OptionError, match="is not the index's"):
        SearchIndex(store, Embedder(other))
    deeper = SearchIndex(store, Embedder(embedder.recipe.replace(rerank_depth=7)))  # the same vectors, read deeper
    assert [len(hits) for hits in deeper.search(["cats", "the moon"], k=10)] == [7, 7]


def test_ann_with_a_first_stage_is_built_on_the_pooled_column(first_stage_index, tmp_path, capsys):
    _, _, recipe = first_stage_index
    root = write_beir(tmp_path / "c", [(k, "", v) for k, v in DOCUMENTS.items()], [("q0", "cats")], [("q0", "d0", 1)])
    store = str(tmp_path / "s")
    assert main(["index", "--data", str(root), "--recipe", str(recipe), "--out", store, "--ann", "--quiet"]) == 0
    assert "IVF-PQ on the first-stage column" in capsys.readouterr().err
    assert main(["search", "--index", store, "--query", "kittens and cats", "--top-k", "3", "--approximate"]) == 0
    assert "cats and kittens" in capsys.readouterr().out
