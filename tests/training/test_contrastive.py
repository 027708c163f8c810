"""Contrastive objectives: InfoNCE values, SimCSE moves the encoder, bad pair files fail clearly."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bertlens.cli.main import main
from bertlens.encoding.encoder import Encoder
from bertlens.representation.recipe import Recipe
from bertlens.training.contrastive import ContrastiveConfig, info_nce, train_contrastive


def test_info_nce_matches_its_formula():
    u = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    loss = info_nce(u, u, temperature=0.5)
    expected = -math.log(math.exp(2) / (math.exp(2) + math.exp(0)))
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_simcse_trains_and_is_seeded(tiny_bert_dir):
    texts = [f"sentence number {i} about {w}" for i, w in enumerate(["cats", "dogs", "rain", "code", "music", "tea"] * 6)]

    def run():
        encoder = Encoder(str(tiny_bert_dir))
        before = {k: v.clone() for k, v in encoder.model.state_dict().items()}
        result = train_contrastive(encoder, Recipe(pooler="mean"), texts, None, ContrastiveConfig(lr=1e-3, batch_size=8))
        return encoder, before, result

    encoder, before, result = run()
    assert result.steps == 5
    assert any(not torch.equal(before[k], v) for k, v in encoder.model.state_dict().items())
    again, _, result2 = run()
    assert result2.last_loss == result.last_loss
    for k, v in encoder.model.state_dict().items():
        assert torch.equal(v, again.model.state_dict()[k])


def test_pairs_cli_saves_a_model_and_reports_missing_columns(tmp_path, tiny_bert_dir, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a\tb\n" + "".join(f"query {i}\tanswer {i}\n" for i in range(12)))
    out = tmp_path / "model"
    assert main(["contrastive", "--mode", "pairs", "--pairs", str(pairs), "--text-col", "a", "--text-col2", "b",
                 "--model", str(tiny_bert_dir), "--batch-size", "4", "--out", str(out), "--quiet"]) == 0
    assert (out / "model.safetensors").is_file() and (out / "recipe.json").is_file()
    texts = tmp_path / "t.txt"
    texts.write_text("hello\nworld\n")
    assert main(["embed", str(texts), "--model", str(out), "--out", str(tmp_path / "v.npy")]) == 0
    assert np.load(tmp_path / "v.npy").shape == (2, 32)
    capsys.readouterr()
    code = main(["contrastive", "--mode", "pairs", "--pairs", str(pairs), "--text-col", "a", "--text-col2", "c",
                 "--model", str(tiny_bert_dir), "--out", str(tmp_path / "m2"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and "'c'" in err and len(err.splitlines()) == 1
