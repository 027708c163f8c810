"""recommend's retrieval fine-tuning never trains on a query it then scores (issue #40's train-qrels leakage)."""

from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import retrieval_task
from bertlens.tasks.retrieval import load_beir
from bertlens.workflows.retrieval_step import training_pairs
from tests.tasks.test_retrieval import DOCS, QRELS, QUERIES, write_beir


def test_training_queries_judged_for_scoring_are_left_out_by_id_and_by_text(tmp_path):
    queries = [*QUERIES, ("q6", "a query only trained on"), ("q7", "query 2")]  # q7: q2's text under another id
    root = write_beir(tmp_path / "c", DOCS, queries, QRELS)
    train = [("q0", "d0", 1), ("q1", "d1", 1), ("q6", "d6", 1), ("q7", "d2", 1)]  # q0, q1 also judged in test
    (root / "qrels" / "train.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in train)
    )
    task = retrieval_task("c", load_beir(root), str(root))
    examples, shared = training_pairs(task, Recipe(), limit=100, seed=0)
    assert shared == 3  # q0 and q1 by id, q7 by its text
    assert list(examples.anchors) == ["a query only trained on"] and list(examples.positives) == [
        "title 6 text number 6"
    ]
