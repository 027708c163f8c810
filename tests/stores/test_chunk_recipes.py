"""Chunk recipes deployed: every long-document reading the sweep scores (MaxP ones included) is a recipe, and
its nDCG@10 through `bertlens index` / `bertlens search` on LanceDB equals the sweep's figure for it."""

import json

import numpy as np
import pytest

from bertlens.cli.main import main
from bertlens.probing.candidates import enumerate_candidates
from bertlens.representation.recipe import Recipe
from tests.stores.test_lance import QRELS, QUERIES, TOPICS, store_ndcg
from tests.tasks.test_retrieval import write_beir

pytest.importorskip(
    "lancedb", reason="the stores extra is not installed: pip install -c constraints.txt -e '.[stores]'"
)

FILLER = "this paragraph talks about many other things that have nothing to do with the question asked".split()


def long_document(i: int) -> str:
    """About 60 tokens: the topic sentence somewhere inside filler, so a 32-token limit cuts most documents."""
    rng = np.random.default_rng(i)
    filler = " ".join(rng.choice(FILLER, 40))
    words = filler.split()
    at = int(rng.integers(0, len(words)))
    return " ".join([*words[:at], f"a note about {TOPICS[i % 6]}, number {i}.", *words[at:]])


DOCS = [(f"d{i}", "", long_document(i)) for i in range(18)]


@pytest.fixture(scope="module")
def swept(tmp_path_factory, default_model_dir):
    """The sweep with its long-document readings at a 32-token limit: (collection, readings -> nDCG@10, recipe)."""
    tmp = tmp_path_factory.mktemp("chunks")
    root = write_beir(tmp / "c", DOCS, QUERIES, QRELS)
    out = tmp / "sweep"
    argv = ["sweep", "--data", str(root), "--model", str(default_model_dir), "--poolers", "mean", "--layers", "-1"]
    argv += ["--max-length", "32", "--long-documents", "--precision", "fp32", "--bank-dtype", "float32"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    rows = json.loads((out / "results.json").read_text())["rows"]
    read = [r for r in rows if "~" in r["candidate"] and r["metric"] == "ndcg@10" and "+" not in r["candidate"]]
    readings = {r["candidate"].split("~")[1]: r["value"] for r in read}
    (best,) = {r["candidate"].split("~")[0] for r in read}  # the candidate the readings were scored for
    (candidate,) = [c for c in enumerate_candidates(6, ("mean",)) if c.name == best]
    base = Recipe(model=str(default_model_dir), max_length=32, precision="fp32")
    return root, readings, candidate.recipe(base)


def test_every_reading_the_sweep_scores_is_a_recipe(swept):
    _, readings, _ = swept
    assert {"windows:maxp", "chunks:64:maxp", "late:64:maxp", "late:64:mean"} <= set(readings)
    for spec in readings:
        Recipe(long_text=spec)  # parses: nothing the sweep scores is "not a recipe"


@pytest.mark.parametrize("reading", ["windows:maxp", "chunks:64:maxp", "late:64:maxp", "late:64:mean"])
def test_search_through_the_store_gives_the_sweeps_figure_for_each_reading(tmp_path, swept, default_model_dir, reading):
    root, readings, best = swept
    recipe = best.replace(long_text=reading)
    path = recipe.save(tmp_path / "recipe.json")
    assert main(["index", "--data", str(root), "--recipe", str(path), "--out", str(tmp_path / "s"), "--quiet"]) == 0
    assert store_ndcg(tmp_path / "s", root) == pytest.approx(readings[reading], abs=1e-4)


def test_a_maxp_index_holds_chunk_rows_with_their_spans(tmp_path, default_model_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    recipe = Recipe(model=str(default_model_dir), max_length=32, long_text="chunks:12:maxp", precision="fp32")
    path = recipe.save(tmp_path / "recipe.json")
    assert main(["index", "--data", str(root), "--recipe", str(path), "--out", str(tmp_path / "s"), "--quiet"]) == 0
    assert main(["search", "--index", str(tmp_path / "s"), "--query", TOPICS[2], "--top-k", "3"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 and len({line.split("\t")[2] for line in lines}) == 3  # three distinct documents
    import lancedb

    from bertlens.stores.lance import ROWS

    table = lancedb.connect(str(tmp_path / "s")).open_table(ROWS).to_arrow().to_pylist()
    texts = {d: t for d, _, t in DOCS}
    assert len(table) > len(DOCS)  # several chunks a document
    for row in table:
        assert texts[row["doc_id"]][row["start"] : row["end"]] == row["text"]
    d0 = sorted((r for r in table if r["doc_id"] == "d0"), key=lambda r: r["chunk"])
    assert [r["chunk"] for r in d0] == list(range(len(d0)))
    assert d0[0]["start"] == 0 and d0[-1]["end"] == len(texts["d0"])
