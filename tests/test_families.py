"""The family table: every family is exercised by the test matrix, and an architecture it does not know still
embeds while what needs the table (fine-tuning blocks, the masked-LM head, layer students) says so in one line."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from bertlens.cli.main import main
from bertlens.errors import BertlensError
from bertlens.families import FAMILIES, family_of, require_family
from tests.conftest import FAMILY_CONFIGS, SHARED, TOKENIZER_FILES


def test_every_family_has_a_tiny_model_in_the_test_matrix():
    tested = {family_of(model_type).name for model_type in FAMILY_CONFIGS}
    assert tested == {family.name for family in FAMILIES}
    assert family_of("bert").layers == "encoder.layer" and family_of("distilbert").layer_count_key == "n_layers"
    assert family_of("gpt2") is None
    with pytest.raises(BertlensError, match="'gpt2'.*family table does not know.*where its layers are"):
        require_family("gpt2", "m", "where its layers are")


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    from transformers import GPT2Config, GPT2Model

    path = tmp_path_factory.mktemp("tiny-gpt2")
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=30522, n_embd=32, n_layer=2, n_head=4, n_positions=128)
    GPT2Model(config).eval().save_pretrained(path, safe_serialization=True)
    raw = SHARED / "models" / "tiny-raw-bert"
    for name in TOKENIZER_FILES:
        if (raw / name).exists():
            shutil.copy(raw / name, path / name)
    return path


def test_an_unknown_architecture_embeds_and_says_what_it_cannot_do(tiny_gpt2, tmp_path, capsys):
    texts = tmp_path / "t.txt"
    texts.write_text("a first text\na second one\n" * 10)
    assert main(["embed", str(texts), "--model", str(tiny_gpt2), "--out", str(tmp_path / "v.npy"), "--quiet"]) == 0
    assert np.load(tmp_path / "v.npy").shape == (20, 32)
    capsys.readouterr()
    code = main(["contrastive", "--mode", "simcse", "--texts", str(texts), "--model", str(tiny_gpt2), "--out",
                 str(tmp_path / "m"), "--quiet"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "family table does not know" in err[0] and "Traceback" not in err[0]
    code = main(["pretrain", "--from", str(tiny_gpt2), "--texts", str(texts), "--out", str(tmp_path / "p"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "masked-LM head" in err[0]
