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
