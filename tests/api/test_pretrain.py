"""`bertlens.pretrain(...)` is `bertlens pretrain`: documents in memory train as the same file does, `--from` is the
keyword `model`, and the old from-scratch `--config SIZE` is answered with its new name."""

from __future__ import annotations

import json

import pytest

import bertlens
from bertlens.cli.main import main
from tests.cli.test_pretrain import RAW, corpus  # noqa: F401 - the shared corpus fixture


def test_documents_in_memory_train_as_the_file_does(tmp_path, corpus):  # noqa: F811
    quick = ["--max-length", "64", "--batch-size", "16", "--quiet", "--cache-dir", str(tmp_path / "c")]
    assert main(["pretrain", "--from", str(RAW), "--texts", str(corpus), "--out", str(tmp_path / "cli"), *quick]) == 0
    documents = corpus.read_text().splitlines()
    adapted = bertlens.pretrain(model=str(RAW), texts=documents, max_length=64, batch_size=16, out=tmp_path / "py",
                                cache_dir=tmp_path / "c2")  # fmt: skip
    cli = json.loads((tmp_path / "cli" / "training.json").read_text())
    row = adapted.rows()[0]
    assert row["heldout_loss_final"] == pytest.approx(cli["heldout_loss_final"], abs=1e-5)
    assert row["tokens"] == cli["tokens"] and "held-out loss" in repr(adapted)


def test_the_old_from_scratch_flag_is_answered_with_its_new_name(tmp_path, capsys):
    assert main(["pretrain", "--config", "tiny", "--texts", "a.txt", "--out", str(tmp_path / "o")]) == 1
    assert "give --scratch SIZE|FILE --tokenizer DIR" in capsys.readouterr().err
    with pytest.raises(bertlens.BertlensError, match="give exactly one of model .* or scratch"):
        bertlens.pretrain(texts=["a"], out=tmp_path / "o")
    with pytest.raises(bertlens.BertlensError, match="scratch trains from scratch and needs tokenizer"):
        bertlens.pretrain(scratch="tiny", texts=["a"], out=tmp_path / "o")
