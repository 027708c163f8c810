"""The server store: a real Chroma server (`chroma run`, from the chromadb package) started by the test, indexed
and searched through `bertlens index --store` and `bertlens search`, with the same nDCG@10 as the sweep."""

import pytest

from bertlens.cli.main import main
from bertlens.errors import BertlensError
from bertlens.representation.recipe import Recipe
from bertlens.stores.chroma import APPROXIMATE_EF, free_port, local_chroma_server
from tests.stores.test_lance import DOCS, QRELS, QUERIES, store_ndcg, sweep_ndcg
from tests.tasks.test_retrieval import write_beir

chromadb = pytest.importorskip("chromadb", reason="the stores extra is not installed: pip install '.[stores]'")


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    try:
        with local_chroma_server(tmp_path_factory.mktemp("chroma")) as prefix:
            yield prefix
    except BertlensError as exc:
        if "not on PATH" in str(exc):
            pytest.skip(str(exc))
        raise


def test_search_through_a_chroma_server_gives_the_sweeps_ndcg(tmp_path, chroma_server, default_model_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    recipe = Recipe(model=str(default_model_dir), precision="fp32").save(tmp_path / "recipe.json")
    store = f"{chroma_server}/notes"
    code = main(["index", "--data", str(root), "--recipe", str(recipe), "--store", store, "--batch", "5", "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert "indexed 18 documents (18 rows in the store)" in capsys.readouterr().err
    code = main(
        ["index", "--data", str(root), "--recipe", str(recipe), "--store", store, "--quiet"]
    )  # rerun: nothing new
    assert code == 0 and "resumed: 18 documents were already there" in capsys.readouterr().err
    assert store_ndcg(store, root) == pytest.approx(sweep_ndcg(tmp_path, root, default_model_dir), abs=1e-4)


def test_no_server_is_one_line(capsys, tmp_path):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    code = main(["index", "--data", str(root), "--store", f"chroma://127.0.0.1:{free_port()}/x", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "no Chroma server answers" in err and len(err.strip().splitlines()) == 1


def test_ef_search_is_set_only_when_it_must_change_and_exact_stays_exact(
    tmp_path, chroma_server, default_model_dir, monkeypatch
):
    """A search reads ef_search with the collection it fetches anyway; it is changed (one more round trip) only when
    an exact search follows an approximate one or the other way round, never left where exact would not be exact."""
    import numpy as np

    from bertlens.stores.open import open_store

    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    recipe = Recipe(model=str(default_model_dir), precision="fp32").save(tmp_path / "recipe.json")
    store_uri = f"{chroma_server}/efsearch"  # Chroma names need 3 characters or more
    assert main(["index", "--data", str(root), "--recipe", str(recipe), "--store", store_uri, "--quiet"]) == 0
    store = open_store(store_uri)
    changes = []
    original = chromadb.api.models.Collection.Collection.modify
    monkeypatch.setattr(
        chromadb.api.models.Collection.Collection,
        "modify",
        lambda self, **kw: changes.append(kw["configuration"]["hnsw"]["ef_search"]) or original(self, **kw),
    )
    query = np.random.default_rng(0).normal(size=(2, 384)).astype(np.float32)
    first = store.search(query, 5, exact=True)
    assert store.search(query, 5, exact=True) == first and store.search(query, 5, exact=True) == first
    store.search(query, 5, exact=False)
    assert store.search(query, 5, exact=True) == first
    assert changes == [18, APPROXIMATE_EF, 18], changes  # 18 documents: exact; Chroma's own default was 100
