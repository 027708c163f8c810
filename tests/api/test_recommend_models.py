"""`recommend` with several models (issue #74): a first step chooses the encoder across them, by the sweep's rule
and the run's latency budget, then every step answers on the chosen model within what is left of the budget."""

import csv

import pytest

import bertlens
from bertlens.cli.main import main
from bertlens.errors import OptionError
from tests.conftest import DATA


def emobank(path, count=240):
    with open(DATA / "emobank" / "emobank.csv", encoding="utf-8", newline="") as handle:
        rows = [(r["text"], r["V"]) for r in csv.DictReader(handle) if r["text"].strip()][:count]
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([("text", "V"), *rows])
    return path


def test_recommend_chooses_the_encoder_first_and_answers_every_step(
    tmp_path, tiny_bert_dir, second_tiny_bert_dir, capsys
):
    models = [str(tiny_bert_dir), str(second_tiny_bert_dir)]
    out = tmp_path / "rec"
    argv = ["recommend", "--data", str(emobank(tmp_path / "v.csv")), "--text-col", "text", "--label-col", "V",
            "--model", models[0], "--model", models[1], "--budget-minutes", "1", "--no-int8", "--quiet",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    run = bertlens.recommend(data=tmp_path / "v.csv", text_col="text", label_col="V", models=models,
                             budget_minutes=1, no_int8=True, quiet=True, out=tmp_path / "again")  # fmt: skip
    first = run.decisions[0]
    assert first.step == "encoder" and first.confidence == "measured"
    assert any(m in first.decision for m in models) and "texts/s" in first.evidence and "spearman" in first.evidence
    assert run.recipe.model in models and run.result.model == run.recipe.model
    assert [d.step for d in run.decisions[1:]] == ["text length", "domain", "representation",
                                                   "frozen or fine-tuned", "latency"]  # fmt: skip
    assert (out / "report.md").read_text().count("encoder") >= 1


def test_a_latency_budget_no_model_meets_is_one_line(tmp_path, tiny_bert_dir, second_tiny_bert_dir):
    with pytest.raises(OptionError, match="no model meets the budget"):
        bertlens.recommend(data=emobank(tmp_path / "v.csv"), text_col="text", label_col="V", quiet=True,
                           models=[str(tiny_bert_dir), str(second_tiny_bert_dir)], latency_budget_ms=0.001)  # fmt: skip
