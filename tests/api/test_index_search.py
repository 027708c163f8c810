"""`bertlens.index(...)` / `bertlens.search(...)` and the commands are one definition: documents in memory land in
the store as a file's do, the hits equal the command's, and bad values are refused before any model loads, in each
caller's words."""

from __future__ import annotations

import json

import pytest

import bertlens
from bertlens.cli.main import main
from bertlens.representation.recipe import Recipe

pytest.importorskip(
    "lancedb", reason="the stores extra is not installed: pip install -c constraints.txt -e '.[stores]'"
)

DOCUMENTS = ["a note about cats and kittens", "stock markets fell", "rain and weather today", "baking bread at home"]


def test_documents_in_memory_and_from_a_file_give_the_same_hits(tmp_path, tiny_bert_dir, capsys):
    recipe = Recipe(model=str(tiny_bert_dir), precision="fp32")
    done = bertlens.index(data=DOCUMENTS, recipe=recipe, out=str(tmp_path / "memory"))
    assert done.summary.written == 4 and done.to_arrow().num_rows == 1 and "4 documents written" in repr(done)

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(DOCUMENTS)))
    argv = ["index", "--data", str(corpus), "--text-col", "text", "--id-col", "id", "--out", str(tmp_path / "file")]
    assert main([*argv, "--recipe", str(recipe.save(tmp_path / "r.json")), "--quiet"]) == 0, capsys.readouterr().err
    assert done.summary.fingerprint in capsys.readouterr().err

    hits = bertlens.search(index=str(tmp_path / "memory"), query=["baking", "the weather"], top_k=2)
    assert [(h["query_id"], h["rank"]) for h in hits.rows()] == [("q1", 1), ("q1", 2), ("q2", 1), ("q2", 2)]
    out = tmp_path / "hits.json"
    assert main(["search", "--index", str(tmp_path / "file"), "--query", "baking", "--query", "the weather",
                 "--top-k", "2", "--out", str(out)]) == 0  # fmt: skip
    assert json.loads(out.read_text()) == hits.rows()  # the same documents, scores and texts
    hits.save(tmp_path / "python.json")
    assert (tmp_path / "python.json").read_text() == out.read_text()
    one = bertlens.search(index=str(tmp_path / "memory"), query="cats", top_k=1)  # one text: query q1
    assert [h["query_id"] for h in one.rows()] == ["q1"] and "<table>" in one._repr_html_()


def test_bad_values_are_refused_in_each_callers_words_before_any_model(tmp_path, no_model_loads, capsys):
    with pytest.raises(bertlens.BertlensError, match="^give exactly one of out .* or store"):
        bertlens.index(data=DOCUMENTS)
    assert main(["index", "--data", str(tmp_path)]) == 1
    assert "give exactly one of --out (a LanceDB directory) or --store" in capsys.readouterr().err
    with pytest.raises(bertlens.BertlensError, match="^batch must be at least 1"):
        bertlens.index(data=DOCUMENTS, out=str(tmp_path / "s"), batch=0)
    with pytest.raises(bertlens.BertlensError, match="^data given as a list must hold strings"):
        bertlens.index(data=["fine", 2], out=str(tmp_path / "s"))
    with pytest.raises(
        bertlens.BertlensError, match=r"^the in-memory data: 1 empty documents \(rows 2\); .*drop_invalid"
    ):
        bertlens.index(data=["fine", " "], out=str(tmp_path / "s"))
    with pytest.raises(bertlens.BertlensError, match="^top_k must be at least 1"):
        bertlens.search(index=str(tmp_path), query="a", top_k=0)
    assert main(["search", "--index", str(tmp_path), "--query", "a", "--top-k", "0"]) == 1
    assert "--top-k must be at least 1" in capsys.readouterr().err
    with pytest.raises(bertlens.BertlensError, match="^no query to search: give query or queries"):
        bertlens.search(index=str(tmp_path))
    with pytest.raises(bertlens.BertlensError, match="^out .*: use one of .json, .parquet"):
        bertlens.search(index=str(tmp_path), query="a", out=tmp_path / "hits.csv")
    with pytest.raises(bertlens.BertlensError, match="unknown option 'k'"):
        bertlens.search(index=str(tmp_path), query="a", k=3)
