"""`bertlens index` into LanceDB and `bertlens search` on it: the sweep's nDCG@10 through the store, a killed run
resumed without duplicates, and queries of another recipe refused."""

import json

import numpy as np
import pytest

from bertlens.cli.main import main
from bertlens.embedding.embedder import Embedder
from bertlens.experiments.index import run_index
from bertlens.experiments.search import SearchIndex
from bertlens.metrics.ranking import ranking_metrics
from bertlens.representation.recipe import Recipe
from bertlens.stores.lance import LanceStore
from bertlens.tasks.retrieval import load_beir, query_split
from tests.tasks.test_retrieval import write_beir

pytest.importorskip(
    "lancedb", reason="the stores extra is not installed: pip install -c constraints.txt -e '.[stores]'"
)

TOPICS = ["cats and kittens", "stock markets", "rain and weather", "football matches", "baking bread", "the moon"]
DOCS = [(f"d{i}", "", f"a note about {TOPICS[i % 6]}, number {i}") for i in range(18)]
QUERIES = [(f"q{i}", f"tell me about {TOPICS[i]}") for i in range(6)]
QRELS = [(f"q{i}", f"d{i + 6 * j}", 1 + (j == 0)) for i in range(6) for j in range(3)]


def store_ndcg(store_uri, root, seed=0) -> float:
    """nDCG@10 of `bertlens search` on the collection's scoring half, computed as the sweep computes it."""
    collection = load_beir(root)
    split = query_split(collection, seed)
    index = SearchIndex(
        (store := __import__("bertlens.stores.open", fromlist=["open_store"]).open_store(str(store_uri))),
        Embedder(Recipe.from_json(store.record().recipe_json)),
    )
    found = index.search([collection.queries[q] for q in split.test], k=len(collection.documents))
    row = {d: i for i, d in enumerate(collection.doc_ids)}
    ranked = np.array([[row[h.doc_id] for h in hits] for hits in found])
    return float(ranking_metrics(ranked, list(split.test_judgements))["ndcg@10"].mean())


def sweep_ndcg(tmp_path, root, model) -> float:
    out = tmp_path / "sweep"
    argv = ["sweep", "--data", str(root), "--model", str(model), "--poolers", "mean", "--layers", "-1"]
    assert main([*argv, "--precision", "fp32", "--bank-dtype", "float32", "--out", str(out), "--quiet"]) == 0
    rows = json.loads((out / "results.json").read_text())["rows"]
    (row,) = [
        r
        for r in rows
        if r["candidate"].startswith("mean/L") and "+" not in r["candidate"] and r["metric"] == "ndcg@10"
    ]
    return row["value"]


def test_search_through_lancedb_gives_the_sweeps_ndcg(tmp_path, default_model_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    recipe = Recipe(model=str(default_model_dir), precision="fp32").save(tmp_path / "recipe.json")
    code = main(["index", "--data", str(root), "--recipe", str(recipe), "--out", str(tmp_path / "store"), "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert "indexed 18 documents (18 rows in the store)" in capsys.readouterr().err
    assert store_ndcg(tmp_path / "store", root) == pytest.approx(
        sweep_ndcg(tmp_path, root, default_model_dir), abs=1e-4
    )


def test_a_killed_index_run_resumes_with_the_same_rows_and_no_duplicates(tmp_path, tiny_bert_dir):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    documents = {d: t for d, _, t in DOCS}
    encoder = Embedder(Recipe(model=str(tiny_bert_dir)))

    def killed_after_two_batches(stage, done, total):
        if done >= 8:
            raise KeyboardInterrupt

    store = LanceStore(tmp_path / "store")
    with pytest.raises(KeyboardInterrupt):
        run_index(documents, encoder, store, batch=4, progress=killed_after_two_batches)
    assert store.count() == 8  # two whole batches committed, nothing of the third
    summary = run_index(documents, encoder, LanceStore(tmp_path / "store"), batch=4)
    assert (summary.skipped, summary.written, summary.rows) == (8, 10, 18)
    whole = LanceStore(tmp_path / "whole")
    run_index(documents, encoder, whole, batch=4)
    resumed, fresh = (s._rows().to_arrow().sort_by("id") for s in (LanceStore(tmp_path / "store"), whole))
    assert resumed.column("id").to_pylist() == fresh.column("id").to_pylist()  # the same rows, none twice
    np.testing.assert_allclose(
        np.stack(resumed.column("vector").to_numpy(zero_copy_only=False)),
        np.stack(fresh.column("vector").to_numpy(zero_copy_only=False)),
        atol=1e-6,
    )
    del root


def test_queries_of_another_recipe_are_refused_in_one_line(tmp_path, tiny_bert_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    store = str(tmp_path / "store")
    assert main(["index", "--data", str(root), "--model", str(tiny_bert_dir), "--out", store, "--quiet"]) == 0
    other = Recipe(model=str(tiny_bert_dir), pooler="cls").save(tmp_path / "cls.json")
    capsys.readouterr()
    code = main(["search", "--index", store, "--query", "the moon", "--recipe", str(other)])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and "is not the index's" in err
    code = main(["index", "--data", str(root), "--recipe", str(other), "--out", store, "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "holds vectors of another recipe" in err and "--restart" in err


def test_search_prints_one_result_a_line_and_writes_json(tmp_path, default_model_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    store = str(tmp_path / "store")
    assert (
        main(["index", "--data", str(root), "--model", "default", "--precision", "fp32", "--out", store, "--quiet"])
        == 0
    )
    capsys.readouterr()
    assert main(["search", "--index", store, "--query", "tell me about the moon", "--top-k", "3"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 and all(line.split("\t")[0] == "q1" for line in lines)
    assert {line.split("\t")[2] for line in lines} == {"d5", "d11", "d17"}  # the three notes about the moon
    out = tmp_path / "hits.json"
    assert main(["search", "--index", store, "--query", "baking bread", "--top-k", "2", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["rank"] for r in rows] == [1, 2] and rows[0]["score"] >= rows[1]["score"]
    del default_model_dir


def test_an_index_made_from_an_onnx_export_is_searched_with_that_export(tmp_path, tiny_bert_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    export = tmp_path / "onnx"
    argv = [
        "export",
        "--format",
        "onnx",
        "--model",
        str(tiny_bert_dir),
        "--texts",
        str(root / "corpus.jsonl"),
        "--column",
        "text",
    ]
    assert main([*argv, "--out", str(export), "--quiet"]) == 0
    store = str(tmp_path / "store")
    assert main(["index", "--data", str(root), "--backend", "onnx", "--model", str(export), "--out", store]) == 0
    capsys.readouterr()
    hits = ["search", "--index", store, "--query", "the moon", "--top-k", "3", "--out", str(tmp_path / "o.json")]
    assert main(hits) == 0  # the record names the export: no flag is needed
    capsys.readouterr()
    by_record = json.loads((tmp_path / "o.json").read_text())
    assert main(["search", "--index", store, "--query", "the moon", "--top-k", "3", "--backend", "torch"]) == 1
    err = capsys.readouterr().err  # PyTorch's weights fingerprint is not the graph's
    assert "is not the index's" in err and "leave out --backend" in err and len(err.strip().splitlines()) == 1
    from bertlens.embedding.onnx_backend import OnnxEmbedder
    from bertlens.experiments.search import open_index

    expected = OnnxEmbedder(export).encode(["the moon"])[0]  # [D]
    best = open_index(store).store.search(expected[None, :], 1)[0][0]
    assert by_record[0]["doc_id"] == best.doc_id and by_record[0]["score"] == pytest.approx(best.score, abs=1e-6)
    moved = tmp_path / "moved"
    export.rename(moved)
    assert main(["search", "--index", store, "--query", "the moon"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "which is gone" in err
    assert main(["search", "--index", store, "--query", "the moon", "--backend", "onnx", "--model", str(moved)]) == 0


def test_index_drops_empty_documents_only_when_asked(tmp_path, tiny_bert_dir, capsys):
    """A BEIR collection with an empty document (as Cranfield has two): without --drop-invalid, one line whose hint
    names a flag `index` accepts; with it, the rest is indexed and the summary counts what was dropped."""
    root = write_beir(tmp_path / "c", [*DOCS, ("d-empty", "", "  ")], QUERIES, QRELS)
    store = str(tmp_path / "store")
    argv = ["index", "--data", str(root), "--model", str(tiny_bert_dir), "--out", store, "--quiet"]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 documents have an empty title and text" in err[0] and "--drop-invalid" in err[0]
    assert main([*argv, "--drop-invalid"]) == 0, capsys.readouterr().err
    assert "dropped 1 empty documents, as asked" in capsys.readouterr().err
    assert LanceStore(store).count() == len(DOCS)


def test_search_drops_malformed_queries_only_when_asked(tmp_path, tiny_bert_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    store = str(tmp_path / "store")
    assert main(["index", "--data", str(root), "--model", str(tiny_bert_dir), "--out", store, "--quiet"]) == 0
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "a", "text": "cats"}\n{"_id": "b", "text": ""}\n\n{"text": "no id"}\n')
    argv = ["search", "--index", store, "--queries", str(queries), "--top-k", "2", "--out", str(tmp_path / "h.json")]
    capsys.readouterr()
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "(lines 2, 4)" in err[0] and "--drop-invalid" in err[0], err
    assert main([*argv, "--drop-invalid"]) == 0, capsys.readouterr().err
    assert {hit["query_id"] for hit in json.loads((tmp_path / "h.json").read_text())} == {"a"}
