"""`bertlens.compare(...)` and `bertlens.finetune(...)` are their commands: the same scores from Python and from the
shell with the same seed, the schedule checked before any model loads in Python's words."""

from __future__ import annotations

import json

import pytest

import bertlens
from bertlens.cli.main import main
from tests.conftest import DATA

FAST = {"epochs": 1, "min_steps": 2, "batch_size": 16, "max_dev": 40}
FAST_FLAGS = ["--epochs", "1", "--min-steps", "2", "--batch-size", "16", "--max-dev", "40", "--quiet"]


def test_finetune_from_python_scores_what_the_command_scores(tmp_path, tiny_bert_dir, capsys):
    common = ["finetune", "--task", "sst2", "--data-dir", str(DATA), "--model", str(tiny_bert_dir), "--size", "32"]
    assert main([*common, "--out", str(tmp_path / "cli"), *FAST_FLAGS]) == 0, capsys.readouterr().err
    tuned = bertlens.finetune(task="sst2", data_dir=str(DATA), model=str(tiny_bert_dir), size="32",
                              out=tmp_path / "python", **FAST)  # fmt: skip
    record = json.loads((tmp_path / "cli" / "training.json").read_text())
    assert tuned.rows()[0]["test"] == record["test"] and tuned.rows()[0]["train_examples"] == 32
    assert (tmp_path / "python" / "model.safetensors").is_file() and "FinetuneRun(sst2" in repr(tuned)


def test_compare_from_python_gives_the_commands_runs(tmp_path, tiny_bert_dir, capsys):
    common = ["compare", "--task", "sst2", "--data-dir", str(DATA), "--model", str(tiny_bert_dir), "--sizes", "24"]
    argv = [*common, "--strategies", "frozen,full", "--frozen-sizes", "", "--seeds", "1", "--drift-task", "none"]
    assert main([*argv, "--out", str(tmp_path / "cli"), *FAST_FLAGS]) == 0, capsys.readouterr().err
    curves = bertlens.compare(task="sst2", data_dir=str(DATA), model=str(tiny_bert_dir), sizes="24",
                              strategies="frozen,full", frozen_sizes="", seeds=1, drift_task="none", **FAST)  # fmt: skip
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())["runs"]
    scores = [(r["strategy"], r["size"], r["seed"], r["test"]) for r in curves.rows()]
    assert scores == [(r["strategy"], r["size"], r["seed"], r["test"]) for r in cli]
    assert curves.plot().axes and "<table>" in curves._repr_html_() and curves.payoff


@pytest.mark.parametrize(
    ("command", "call", "message"),
    [
        ("finetune", {"task": "sst2"}, "out is required"),
        ("finetune", {"task": "sst2", "out": "x", "lr": 0}, "lr must be positive"),
        ("finetune", {"task": "sst2", "out": "x", "warmup": 1.0}, r"warmup must be in \[0, 1\)"),
        ("finetune", {"task": "sst2", "out": "x", "epochs": 0}, "epochs must be at least 1"),
        ("finetune", {"task": "sst2", "out": "x", "train_precision": "fp8"}, "train_precision must be one of"),
        ("finetune", {"texts": ["a", "b"], "out": "x"}, "finetune trains on labels"),
        ("compare", {"task": "sst2", "seeds": 0}, "seeds must be at least 1"),
        ("compare", {"task": "sst2", "weight_decay": -1.0}, "weight_decay must be 0 or more"),
        ("compare", {"task": "sst2", "min_steps": -1}, "min_steps must be at least 0"),
    ],
)
def test_bad_values_are_refused_before_any_model(no_model_loads, command, call, message):
    with pytest.raises(bertlens.BertlensError, match=message):
        getattr(bertlens, command)(**call)


def test_every_fine_tuning_run_of_a_comparison_starts_from_weights_read_once(tmp_path, tiny_bert_dir, model_reads):
    """2 strategies x 2 sizes x 2 seeds fine-tuned from one read of the weights (a fresh copy in memory each run;
    before, every run and the frozen baseline read them from disk again: 9 reads)."""
    bertlens.compare(task="sst2", data_dir=str(DATA), model=str(tiny_bert_dir), sizes="16,24", strategies="full,gradual",
                     frozen_sizes="", seeds=2, drift_task="none", **FAST)  # fmt: skip
    assert len(model_reads) == 1, f"{len(model_reads)} reads: {model_reads}"
