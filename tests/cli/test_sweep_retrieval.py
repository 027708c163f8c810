"""`bertlens sweep` on retrieval data: a BEIR directory, a pairs table, bad qrels."""

import json

from bertlens.cli.main import main
from bertlens.representation.recipe import Recipe
from tests.tasks.test_retrieval import DOCS, QRELS, QUERIES, write_beir


def run(capsys, *argv):
    code = main(["sweep", *map(str, argv), "--quiet"])
    return code, capsys.readouterr().err


def test_a_retrieval_sweep_on_bad_qrels_is_one_line_and_exit_1(tmp_path, tiny_bert_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS + [("q2", "d42", 1)])
    code, err = run(capsys, "--data", root, "--model", tiny_bert_dir, "--out", tmp_path / "out")
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1  # names the file, the count, an id and the line
    assert "qrels/test.tsv: 1 judgements name a document id that corpus.jsonl lacks (e.g. 'd42'; lines 10)" in lines[0]
    assert "--drop-invalid" in lines[0] and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_a_retrieval_sweep_writes_every_metric_and_a_recipe(tmp_path, tiny_bert_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    code, err = run(capsys, "--data", root, "--model", tiny_bert_dir, "--poolers", "mean,cls", "--out", tmp_path / "o")
    assert code == 0, err
    results = json.loads((tmp_path / "o" / "results.json").read_text())
    assert results["kind"] == "retrieval"
    metrics = {row["metric"] for row in results["rows"]}
    assert metrics == {"ndcg@10", "mrr@10", "recall@100", "map@100"}
    row = next(r for r in results["rows"] if r["candidate"] == "mean/L2" and r["metric"] == "ndcg@10")
    assert row["protocol"] == "cosine" and row["split"] == "test" and row["n"] == 3
    assert row["ci_low"] <= row["value"] <= row["ci_high"]
    assert any(r["candidate"] == "mean/L2+whiten" for r in results["rows"])  # whitening fitted on the corpus
    assert "seeded half" in results["protocols"]["cosine"]["description"]
    recipe = json.loads((tmp_path / "o" / "recipe.json").read_text())
    assert recipe["pooler"] in ("mean", "cls")
    assert list(recipe["dimension_loss"]) == ["16"]  # nDCG@10 lost at half the width, for the server's `dimensions`


def test_a_pairs_table_is_a_retrieval_task(tmp_path, tiny_bert_dir, capsys):
    path = tmp_path / "faq.csv"
    rows = [(f"question {i}", f"answer {i}") for i in range(8)]
    path.write_text("q,a\n" + "".join(f"{q},{a}\n" for q, a in rows))
    code, err = run(
        capsys, "--data", path, "--task-type", "retrieval", "--text-col", "q", "--text-col2", "a",
        "--model", tiny_bert_dir, "--poolers", "mean", "--out", tmp_path / "o",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads((tmp_path / "o" / "results.json").read_text())["protocols"]["cosine"]["n"] == 4


def test_prompt_sets_are_scored_as_candidates_and_reach_the_recipe(tmp_path, tiny_bert_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    code, err = run(
        capsys, "--data", root, "--model", tiny_bert_dir, "--poolers", "mean", "--layers", "2",
        "--prompts", "e5=query: |passage: ", "--out", tmp_path / "o",
    )  # fmt: skip
    assert code == 0, err
    results = json.loads((tmp_path / "o" / "results.json").read_text())
    names = {row["candidate"] for row in results["rows"] if row["metric"] == "ndcg@10"}
    assert {"mean/L2", "mean/L2@e5", "mean/L2+whiten@e5"} <= names
    recipe = json.loads((tmp_path / "o" / "recipe.json").read_text())
    prompted = results["recommended"].endswith("@e5")
    assert (recipe["query_prompt"], recipe["document_prompt"]) == (
        ("query: ", "passage: ") if prompted else (None, None)
    )
    assert list(recipe["dimension_loss"]) == ["16"]  # measured on the bank of the chosen prompt set, prompted or not


def test_bad_prompt_sets_are_one_line(tmp_path, tiny_bert_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    code, err = run(capsys, "--data", root, "--model", tiny_bert_dir, "--prompts", "query: |passage: ")
    assert code == 1 and "is not NAME=QUERY_PROMPT|DOCUMENT_PROMPT" in err and len(err.strip().splitlines()) == 1


def test_long_document_readings_are_scored_for_the_best_candidate(tmp_path, tiny_bert_dir, capsys):
    long_docs = [(f"d{i}", "", " ".join(f"word{(i * 7 + k) % 50}" for k in range(300))) for i in range(10)]
    root = write_beir(tmp_path / "c", long_docs, QUERIES, QRELS)
    code, err = run(
        capsys, "--data", root, "--model", tiny_bert_dir, "--poolers", "mean", "--layers", "2", "--long-documents",
        "--out", tmp_path / "o",
    )  # fmt: skip
    assert code == 0, err
    results = json.loads((tmp_path / "o" / "results.json").read_text())
    rows = {r["candidate"]: r for r in results["rows"] if r["metric"] == "ndcg@10"}
    readings = {name.split("~")[1]: row["scored_by"] for name, row in rows.items() if "~" in name}
    assert readings == {
        "head_tail:128": "cosine",
        "windows:mean": "cosine",
        "windows:maxp": "maxp",
        "chunks:64:mean": "cosine",
        "chunks:64:maxp": "maxp",
        "late:64:mean": "cosine",
        "late:64:maxp": "maxp",
    }
    assert "long_document_seconds" in results["timings"]
    for reading in readings:  # every reading is a recipe the sweep may recommend
        Recipe(long_text=reading)
