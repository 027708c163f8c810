"""`bertlens.recommend(...)` and `bertlens recommend ...` are one definition: the same checks before any model loads,
each worded for its caller; data in memory; the weights read at most twice in a walk; the result shows itself."""

from __future__ import annotations

import json

import pytest

import bertlens
from bertlens.cli.main import main
from tests.conftest import DATA


def test_a_bad_budget_is_refused_in_each_callers_words_before_any_model(no_model_loads, capsys):
    with pytest.raises(bertlens.BertlensError, match=r"^budget_minutes must be positive, got -1"):
        bertlens.recommend(task="sst2", budget_minutes=-1)
    assert main(["recommend", "--task", "sst2", "--budget-minutes", "-1", "--out", "unused"]) == 1
    assert "error: --budget-minutes must be positive, got -1" in capsys.readouterr().err
    with pytest.raises(bertlens.BertlensError, match=r"^unknown option 'budget': did you mean 'budget_minutes'\?"):
        bertlens.recommend(task="sst2", budget=3)


def test_in_memory_data_walks_every_step_reading_the_weights_at_most_twice(tmp_path, tiny_bert_dir, model_reads):
    """A small labelled table in memory, a short budget: every decision made, the weights read from disk at most
    twice (once per attention implementation), the result as a table and a notebook view, saved like the CLI's."""
    lines = (DATA / "sst2" / "train.txt").read_text().splitlines()
    rows = [ln for ln in lines if ln.startswith("0")][:60] + [ln for ln in lines if ln.startswith("1")][:60]
    table = {"review": [ln.split(" ", 1)[1] for ln in rows], "stars": [int(ln[0]) for ln in rows]}
    advice = bertlens.recommend(
        data=table, text_col="review", label_col="stars", model=str(tiny_bert_dir), budget_minutes=1, no_int8=True,
        data_dir=str(DATA),
    )  # fmt: skip
    steps = [row["step"] for row in advice.rows()]
    assert "representation" in steps and "frozen or fine-tuned" in steps and "latency" in steps
    assert 1 <= len(model_reads) <= 2, model_reads
    assert advice.to_arrow().num_rows == len(advice.decisions)
    assert "<table>" in advice._repr_html_() and advice.recipe.model
    paths = advice.save(tmp_path / "out")
    assert json.loads(paths["options"].read_text())["data"] == "<in memory: dict>"
    printed = [c for d in json.loads(paths["results"].read_text())["decisions"] for c in d["commands"]]
    assert all("bertlens-data-" not in c for c in printed)  # no temporary file named in a printed command


def test_a_pip_user_without_shared_data_walks_on(tmp_path, monkeypatch):
    """Outside a checkout there is no shared data folder: the domain step goes without its reference corpus (and
    says so) instead of refusing the user's own file; a --data-dir that is given must exist."""
    import pytest

    from bertlens.api.recommend import _shared_data
    from bertlens.errors import BertlensError

    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.delenv("BERTLENS_DATA", raising=False)
    assert _shared_data(None) is None
    with pytest.raises(BertlensError, match="does not exist"):
        _shared_data(str(tmp_path / "nowhere"))
