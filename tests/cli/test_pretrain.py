"""`bertlens pretrain`: continued masked-LM training that keeps its head, on files (DAPT) or a task (TAPT)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bertlens.cli.main import main
from tests.conftest import DATA, SHARED

RAW = SHARED / "models" / "tiny-raw-bert"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "reviews.txt"
    with open(DATA / "movie_reviews" / "reviews.jsonl", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"].replace("\n", " ") for line, _ in zip(handle, range(30), strict=False)]
    path.write_text("\n".join(texts) + "\n")
    return path


def pretrain(*args: str) -> int:
    return main(["pretrain", "--max-length", "64", "--batch-size", "16", "--quiet", *args])


def test_dapt_lowers_the_heldout_loss_and_keeps_the_head(tmp_path, corpus):
    out = tmp_path / "dapt"
    assert (
        pretrain("--from", str(RAW), "--texts", str(corpus), "--out", str(out), "--cache-dir", str(tmp_path / "c")) == 0
    )
    assert {"model.safetensors", "mlm_head.safetensors", "recipe.json", "training.json"} <= {
        p.name for p in out.iterdir()
    }
    record = json.loads((out / "training.json").read_text())
    assert record["head"] == "the model's own masked-LM head (BERT: cls)"
    assert record["heldout_loss_final"] < record["heldout_loss_base"]
    assert not (out / "checkpoint").exists()
    again = tmp_path / "again"  # a second pretrain continues from the saved encoder *and* head
    assert (
        pretrain("--from", str(out), "--texts", str(corpus), "--out", str(again), "--cache-dir", str(tmp_path / "c"))
        == 0
    )
    second = json.loads((again / "training.json").read_text())
    assert second["head"] == "the model's own masked-LM head (BERT: cls)"
    assert second["heldout_loss_base"] == pytest.approx(record["heldout_loss_final"], abs=1e-4)
    texts = tmp_path / "t.txt"
    texts.write_text("a fine film\na dull one\n")
    assert main(["embed", str(texts), "--model", str(out), "--out", str(tmp_path / "v.npy"), "--quiet"]) == 0
    assert np.load(tmp_path / "v.npy").shape == (2, 128)


def test_tapt_on_a_task_with_a_model_without_a_head(tmp_path, tiny_bert_dir):
    out = tmp_path / "tapt"
    assert (
        pretrain(
            "--from",
            str(tiny_bert_dir),
            "--task",
            "trec",
            "--data-dir",
            str(DATA),
            "--out",
            str(out),
            "--cache-dir",
            str(tmp_path / "c"),
        )
        == 0
    )
    record = json.loads((out / "training.json").read_text())
    assert "tied to the input embeddings" in record["head"] and record["source"] == "task trec (training texts)"
    assert record["heldout_loss_final"] < record["heldout_loss_base"]


@pytest.mark.extended  # the DAPT test above covers the training loop by default
def test_from_scratch_starts_at_chance_and_learns(tmp_path, corpus):
    out = tmp_path / "scratch"
    assert (
        pretrain(
            "--scratch",
            "tiny",
            "--tokenizer",
            str(RAW),
            "--texts",
            str(corpus),
            "--epochs",
            "2",
            "--out",
            str(out),
            "--cache-dir",
            str(tmp_path / "c"),
        )
        == 0
    )
    record = json.loads((out / "training.json").read_text())
    assert record["heldout_loss_base"] == pytest.approx(np.log(30522), abs=0.3)  # a random model: about ln(vocabulary)
    assert record["heldout_loss_final"] < record["heldout_loss_base"] - 0.1
    assert not (out / ".init").exists() and json.loads((out / "config.json").read_text())["num_hidden_layers"] == 6
