import json
import re

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
        "queries without a relevant judgement (ignored, as BEIR and MTEB do)": 1,
    }
    assert len(collection.documents) == 10 and len(collection.queries) == 6


def test_queries_nothing_judges_are_ignored_and_counted_as_beir_does(tmp_path):
    """BEIR's SciFact ships every query in queries.jsonl but keeps only qrels/test.tsv: the others are not errors."""
    collection = load_beir(write_beir(tmp_path / "c", DOCS, QUERIES + [("q7", "unjudged"), ("q8", "also")], QRELS))
    assert len(collection.queries) == 6 and "unjudged" not in collection.queries
    assert collection.dropped == {"queries without a relevant judgement (ignored, as BEIR and MTEB do)": 2}


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (
            lambda root: (root / "corpus.jsonl").write_bytes(b'{"_id": "d1", "text": "caf\xe9"}\n'),
            "not utf-8 text (byte",
        ),
        (lambda root: (root / "corpus.jsonl").write_text(""), "corpus.jsonl holds no documents"),
        (lambda root: (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n"), "holds no judgements"),
        (lambda root: (root / "qrels" / "test.tsv").write_text("q0\t0\td0\t1\n"), "this looks like TREC qrels"),
        (
            lambda root: (root / "qrels" / "test.tsv").write_text("q0\td42\t1\n"),
            "name a document id that corpus.jsonl lacks (e.g. 'd42'",
        ),
    ],
    ids=["latin-1 corpus", "empty corpus", "header-only qrels", "TREC qrels", "unknown id shown"],
)
def test_a_damaged_collection_gets_a_line_that_names_what(tmp_path, damage, expected):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    damage(root)
    with pytest.raises(BertlensError, match=re.escape(expected)):
        load_beir(root)


def test_a_bom_and_another_encoding_are_read(tmp_path):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    qrels = root / "qrels" / "test.tsv"
    qrels.write_bytes(b"\xef\xbb\xbf" + qrels.read_bytes())  # a byte-order mark before the header
    assert len(load_beir(root).qrels["test"]) == 6
    root = write_beir(tmp_path / "latin", DOCS, QUERIES, QRELS)
    corpus = root / "corpus.jsonl"
    corpus.write_bytes(corpus.read_bytes().replace(b"text number 1", "caf\u00e9 1".encode("latin-1")))
    assert "café 1" in " ".join(load_beir(root, encoding="latin-1").documents)


def test_a_one_document_corpus_is_too_small_to_rank(tmp_path):
    with pytest.raises(BertlensError, match="the corpus has 1 document; ranking needs at least 2"):
        load_beir(write_beir(tmp_path / "c", DOCS[:1], QUERIES[:1], [("q0", "d0", 1)]))


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
