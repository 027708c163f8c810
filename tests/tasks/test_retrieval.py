import json

import numpy as np
import pytest

from bertlens.errors import BertlensError
from bertlens.tasks.retrieval import load_beir, load_pairs, query_split

from ..conftest import DATA


def write_beir(root, docs, queries, qrels, dev=None):
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in docs)
    )
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": x}) + "\n" for i, x in queries))
    (root / "qrels").mkdir(exist_ok=True)
    for name, rows in (("test", qrels), ("dev", dev)):
        if rows is not None:
            lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{g}" for q, d, g in rows)]
            (root / "qrels" / f"{name}.tsv").write_text("\n".join(lines) + "\n")
    return root


DOCS = [(f"d{i}", f"title {i}", f"text number {i}") for i in range(10)]
QUERIES = [(f"q{i}", f"query {i}") for i in range(6)]
QRELS = [(f"q{i}", f"d{i}", 1) for i in range(6)] + [("q0", "d9", 2), ("q1", "d8", 0)]


def test_a_beir_directory_loads_with_rows_for_ids(tmp_path):
    collection = load_beir(write_beir(tmp_path / "c", DOCS, QUERIES, QRELS))
    assert collection.documents[0] == "title 0 text number 0"  # BEIR joins title and text
    assert len(collection.documents) == 10 and len(collection.queries) == 6
    assert collection.qrels["test"][0] == {0: 1, 9: 2}
    assert collection.qrels["test"][1] == {1: 1, 8: 0}  # a judged non-relevant document stays (grade 0)


@pytest.mark.parametrize(
    "docs, queries, qrels, message",
    [
        (DOCS, QUERIES, QRELS + [("q0", "d99", 1)], "name a document id that corpus.jsonl lacks"),
        (DOCS, QUERIES, QRELS + [("q9", "d1", 1)], "name a query id that queries.jsonl lacks"),
        (DOCS + [("d1", "again", "x")], QUERIES, QRELS, "duplicate _id values, e.g. 'd1'"),
        (DOCS, QUERIES + [("q7", "unjudged")], QRELS, "1 queries have no relevant document"),
        (DOCS + [("d10", "", "  ")], QUERIES, QRELS, "1 documents have an empty title and text"),
        (DOCS, QUERIES, QRELS + [("q0", "d1", "high")], "is not an integer grade"),
        (DOCS, QUERIES, QRELS + [("q0", "d0", 1)], "are judged twice"),
    ],
)
def test_bad_layouts_get_one_line(tmp_path, docs, queries, qrels, message):
    with pytest.raises(BertlensError, match=message):
        load_beir(write_beir(tmp_path / "c", docs, queries, qrels))


def test_drop_invalid_counts_what_it_drops(tmp_path):
    root = write_beir(tmp_path / "c", DOCS + [("d10", "", "")], QUERIES + [("q7", "x")], QRELS + [("q0", "d99", 1)])
    collection = load_beir(root, drop_invalid=True)
    assert collection.dropped == {
        "empty documents": 1,
        "judgements of unknown documents": 1,
        "queries without judgements": 1,
    }
    assert len(collection.documents) == 10 and len(collection.queries) == 6


def test_without_dev_qrels_a_seeded_half_chooses_and_the_other_half_scores(tmp_path):
    collection = load_beir(write_beir(tmp_path / "c", DOCS, QUERIES, QRELS))
    split = query_split(collection, seed=3)
    assert sorted([*split.dev, *split.test]) == list(range(6))
    assert not set(split.dev) & set(split.test)
    assert np.array_equal(split.dev, query_split(collection, seed=3).dev)  # seeded
    assert "seeded half" in split.description


def test_dev_qrels_choose_when_given(tmp_path):
    extra = [(f"q{i}", f"query {i}") for i in range(6, 9)]
    dev = [(f"q{i}", f"d{i}", 1) for i in range(6, 9)]
    collection = load_beir(write_beir(tmp_path / "c", DOCS, QUERIES + extra, QRELS, dev=dev))
    split = query_split(collection)
    assert list(split.dev) == [6, 7, 8] and list(split.test) == list(range(6))
    assert split.dev_judgements[0] == {6: 1}


def test_pairs_become_a_corpus_of_every_document(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("question,answer\nhow tall,very tall\nhow old,quite old\nhow tall,tall indeed\n")
    collection = load_pairs(path, "question", "answer")
    assert collection.documents == ("very tall", "quite old", "tall indeed")
    assert collection.qrels["test"] == {0: {0: 1, 2: 1}, 1: {1: 1}}


def test_the_catalog_collections_load():
    from bertlens.tasks.catalog import get_task
    from bertlens.tasks.loaders import load_catalog_task

    cranfield = load_catalog_task(get_task("cranfield"), DATA)
    assert cranfield.kind.name == "retrieval" and cranfield.metric == "ndcg@10"
    assert len(cranfield.collection.documents) == 1398  # two empty documents dropped, as the notes say
    assert "dropped 2 empty documents" in cranfield.notes
    cisi = load_catalog_task(get_task("cisi"), DATA)
    assert len(cisi.collection.queries) == 76  # the judged ones
