"""`bertlens.contrastive(...)` and `bertlens.distill(...)` are their commands: the same training from Python (texts in
memory) and from the shell (a file), and their checks before any model loads in Python's words."""

from __future__ import annotations

import json

import pytest

import bertlens
from bertlens.cli.main import main

TEXTS = [f"a {w} film about {t}" for w in ("warm", "dull", "sharp", "flat") for t in ("cats", "rain", "war")]


def test_simcse_on_a_list_trains_as_the_command_on_the_file(tmp_path, tiny_bert_dir, capsys):
    corpus = tmp_path / "t.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    quick = ["--epochs", "1", "--batch-size", "4", "--model", str(tiny_bert_dir), "--quiet"]
    assert main(["contrastive", "--texts", str(corpus), "--out", str(tmp_path / "cli"), *quick]) == 0, (
        capsys.readouterr()
    )
    tuned = bertlens.contrastive(texts=TEXTS, out=tmp_path / "python", epochs=1, batch_size=4, model=str(tiny_bert_dir))
    cli = json.loads((tmp_path / "cli" / "training.json").read_text())
    row = tuned.rows()[0]
    assert (row["first_loss"], row["last_loss"]) == pytest.approx((cli["first_loss"], cli["last_loss"]), abs=1e-6)
    assert row["examples"] == 12
    assert (tmp_path / "python" / "model.safetensors").is_file() and "simcse" in repr(tuned)


def test_distill_from_a_list_trains_as_the_command_on_the_file(tmp_path, tiny_bert_dir, capsys):
    corpus = tmp_path / "t.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    common = ["distill", "--teacher", str(tiny_bert_dir), "--student", "layers:1", "--epochs", "1", "--quiet"]
    assert main([*common, "--texts", str(corpus), "--out", str(tmp_path / "cli")]) == 0, capsys.readouterr().err
    student = bertlens.distill(teacher=str(tiny_bert_dir), student="layers:1", texts=TEXTS, epochs=1,
                               out=tmp_path / "python")  # fmt: skip
    cli = json.loads((tmp_path / "cli" / "distill.json").read_text())
    assert student.outcome.record["last_loss"] == pytest.approx(cli["last_loss"], abs=1e-6)
    assert student.rows()[0]["texts"] == len(TEXTS) and "mean cosine" in repr(student)


@pytest.mark.parametrize(
    ("command", "call", "message"),
    [
        ("contrastive", {"texts": TEXTS}, "out is required"),
        ("contrastive", {"texts": TEXTS, "out": "x", "temperature": 0.0}, "temperature must be positive"),
        ("contrastive", {"texts": TEXTS, "out": "x", "mode": "pairs"}, "mode pairs takes pairs or task"),
        ("contrastive", {"pairs": "p.csv", "out": "x", "mode": "pairs"}, "pairs needs text_col and text_col2"),
        ("contrastive", {"texts": TEXTS, "task": "stsb", "out": "x"}, "give exactly one of texts, pairs or task"),
        ("distill", {"student": "layers:1", "texts": TEXTS, "out": "x"}, "teacher is required"),
        ("distill", {"teacher": "default", "student": "layers:1", "out": "x"}, "give exactly one of texts or task"),
        ("distill", {"teacher": "default", "student": "layers:1", "task": "sst2", "out": "x", "heldout": 0.7},
         "heldout must be a share"),
        ("distill", {"teacher": "default", "student": "layers:1", "task": "sst2", "out": "x", "projection": "some"},
         "projection must be one of"),
    ],
)  # fmt: skip
def test_bad_values_are_refused_before_any_model(no_model_loads, command, call, message):
    with pytest.raises(bertlens.BertlensError, match=message):
        getattr(bertlens, command)(**call)
