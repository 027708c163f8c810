"""MTEB runs offline on STS-B from local files with a recipe encoder, and its score equals bertlens's cosine
Spearman for the same recipe (the sweep's cosine protocol on a float32 bank)."""

from __future__ import annotations

import pytest

from bertlens.adapters.mteb import evaluate_sts, read_sts_csv
from bertlens.errors import BertlensError
from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import load_catalog_task
from tests.conftest import DATA

pytest.importorskip("mteb")


def test_mteb_score_equals_the_sweeps_cosine_spearman(tiny_bert_dir, tmp_path):
    task = load_catalog_task(get_task("stsb"), DATA)
    config = SweepConfig(resamples=50, layers=(2,), poolers=("mean",), protocols=("cosine",), bank_dtype="float32")
    result = run_sweep(task, str(tiny_bert_dir), config=config, cache_dir=tmp_path)
    cosine = result.protocols["cosine"]
    sweep = {c.name: float(v) for c, v in zip(cosine.candidates, cosine.test.value, strict=True)}["mean/L2"]
    mteb_score = evaluate_sts(Recipe(model=str(tiny_bert_dir), layers=(2,), pooler="mean"), DATA / "stsb" / "test.csv")
    assert mteb_score == pytest.approx(sweep, abs=1e-4)


def test_a_bad_sts_file_names_its_line(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("a,b,4.0\nc,d,high\n")
    with pytest.raises(BertlensError, match="s.csv:2"):
        read_sts_csv(path)


def _own_ndcg_at_10(recipe: Recipe, directory) -> float:
    """bertlens' own retrieval score: queries and documents each with their role's prompt, cosine, nDCG@10 over
    every judged test query."""
    import numpy as np
    import torch

    from bertlens.embedding.embedder import Embedder
    from bertlens.embedding.prompted import with_role
    from bertlens.metrics.ranking import ranking_metrics, top_k
    from bertlens.tasks.retrieval import load_beir

    collection = load_beir(directory)
    rows = collection.judged("test")
    embedder = Embedder(recipe)
    queries = with_role(embedder, "query").encode([collection.queries[q] for q in rows])  # [Q, D]
    documents = with_role(embedder, "document").encode(list(collection.documents))  # [N, D]
    normalize = torch.nn.functional.normalize
    _, ranked = top_k(normalize(torch.from_numpy(queries), dim=1), normalize(torch.from_numpy(documents), dim=1))
    judgements = [collection.qrels["test"][q] for q in rows]
    return float(np.mean(ranking_metrics(ranked.numpy(), judgements)["ndcg@10"]))


@pytest.mark.userstack
def test_mteb_retrieval_honours_prompts_and_equals_bertlens(tiny_bert_dir):
    """A recipe with query and document prompts: MTEB's nDCG@10 on a local BEIR collection equals bertlens' own
    score, and differs from the same recipe without prompts (so each side really got its own prompt)."""
    from bertlens.adapters.mteb import evaluate_retrieval, recipe_encoder

    directory = DATA / "retrieval" / "cisi"
    prompted = Recipe(
        model=str(tiny_bert_dir), layers=(2,), pooler="mean", query_prompt="query: ", document_prompt="passage: "
    )
    plain = prompted.replace(query_prompt=None, document_prompt=None)
    ours, theirs = _own_ndcg_at_10(prompted, directory), evaluate_retrieval(prompted, directory)
    assert theirs == pytest.approx(ours, abs=1e-4)
    assert evaluate_retrieval(plain, directory) != pytest.approx(theirs, abs=1e-3)
    meta = recipe_encoder(prompted).mteb_model_meta
    assert meta.revision and meta.embed_dim == 32 and meta.use_instructions and meta.similarity_fn_name == "cosine"


def test_a_missing_split_is_one_line(tmp_path):
    from bertlens.adapters.mteb import local_retrieval_task
    from tests.tasks.test_retrieval import DOCS, QRELS, QUERIES, write_beir

    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    with pytest.raises(BertlensError, match="no qrels/dev.tsv"):
        local_retrieval_task(root, split="dev")


def test_a_multi_vector_recipe_runs_through_mtebs_late_interaction_search(tiny_bert_dir):
    """MTEB 2.x's MaxSim search over a multi-vector recipe equals bertlens' own MaxSim ranking of the collection."""
    import numpy as np
    import torch

    from bertlens.adapters.mteb import evaluate_retrieval, recipe_encoder
    from bertlens.embedding.embedder import Embedder
    from bertlens.metrics.ranking import ranking_metrics, top_k_of
    from bertlens.representation.late_interaction import maxsim
    from bertlens.tasks.retrieval import load_beir

    directory = DATA / "retrieval" / "cisi"
    recipe = Recipe(model=str(tiny_bert_dir), layers=(2,), pooler="tokens", include_special=False, query_augment=16)
    collection = load_beir(directory)
    rows = collection.judged("test")
    embedder = Embedder(recipe)
    queries = embedder.for_queries().embed_tokens([collection.queries[q] for q in rows])
    scores = maxsim(queries, embedder.embed_tokens(list(collection.documents)))  # [Q, N]
    ranked = top_k_of(torch.from_numpy(scores), 100).numpy()
    ours = float(np.mean(ranking_metrics(ranked, [collection.qrels["test"][q] for q in rows])["ndcg@10"]))
    assert evaluate_retrieval(recipe, directory) == pytest.approx(ours, abs=1e-4)
    assert recipe_encoder(recipe).mteb_model_meta.similarity_fn_name == "MaxSim"


def _columns(task, split: str, kind: str) -> dict[str, list]:
    """A loaded task's split as MTEB's columns: texts and numbers, or texts and lists of label names."""
    rows = task.splits[split]
    if kind == "regression":
        return {"text": list(rows.texts_a), "label": rows.targets.tolist()}
    return {"text": list(rows.texts_a), "label": [[task.class_names[j] for j in r.nonzero()[0]] for r in rows.targets]}


@pytest.mark.parametrize("kind", ["regression", "multi_label"])
def test_mtebs_own_regression_and_multilabel_evaluators_score_a_recipe(kind, tiny_bert_dir):
    """MTEB's AbsTaskRegression (a linear regression on the embeddings) and AbsTaskMultilabelClassification (kNN)
    run on a bertlens recipe through the adapter, offline, on EmoBank and GoEmotions rows."""
    import math

    from bertlens.adapters.mteb import evaluate_labelled
    from bertlens.tasks.loaders import UserTable, load_user_task

    if kind == "regression":
        table, path = UserTable(None, ("text",), "V", split_col="split"), DATA / "emobank" / "emobank.csv"
    else:
        root = DATA / "goemotions"
        splits = {"test": root / "test.tsv"}
        table = UserTable(None, (0,), 1, header=False, label_sep=",", split_files=splits)
        path = root / "train.tsv"
    task = load_user_task(path, table, max_examples=300, seed=0)
    assert task.kind.name == kind
    scores = evaluate_labelled(
        Recipe(model=str(tiny_bert_dir), layers=(2,), pooler="mean"),
        kind,
        _columns(task, "train", kind),
        _columns(task, "test", kind),
    )
    main = "kendalltau" if kind == "regression" else "accuracy"
    assert math.isfinite(scores[main]) and math.isfinite(scores["main_score"])
