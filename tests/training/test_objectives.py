"""Objectives of the one loop: InfoNCE values, SimCSE moves the encoder and resumes exactly, bad pair files fail clearly."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from bertlens.cli.main import main
from bertlens.encoding.encoder import Encoder
from bertlens.representation.apply import Representation
from bertlens.representation.recipe import Recipe
from bertlens.training.config import CONTRASTIVE_DEFAULTS
from bertlens.training.loop import fine_tune
from bertlens.training.objectives import Contrastive, info_nce
from bertlens.training.strategies import parse_strategy

TEXTS = [f"sentence number {i} about {w}" for i, w in enumerate(["cats", "dogs", "rain", "code", "music", "tea"] * 6)]
SIMCSE = replace(CONTRASTIVE_DEFAULTS, lr=1e-3, batch_size=8, epochs=2, checkpoint_every=3)


def simcse(tiny_bert_dir, recipe=Recipe(pooler="mean"), **kwargs):
    encoder = Encoder(str(tiny_bert_dir))
    objective = Contrastive(encoder, Representation(recipe, trainable=True), encoder.tokenize(TEXTS), None)
    return encoder, fine_tune(encoder, objective, parse_strategy("full", 2), SIMCSE, **kwargs), objective


def test_info_nce_matches_its_formula():
    u = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    loss = info_nce(u, u, temperature=0.5)
    expected = -math.log(math.exp(2) / (math.exp(2) + math.exp(0)))
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_simcse_trains_and_is_seeded(tiny_bert_dir):
    fresh = Encoder(str(tiny_bert_dir)).model.state_dict()
    encoder, result, _ = simcse(tiny_bert_dir)
    assert result.steps == 10  # 36 texts / batch 8 = 5 steps an epoch, 2 epochs
    assert any(not torch.equal(fresh[k], v) for k, v in encoder.model.state_dict().items())
    again, result2, _ = simcse(tiny_bert_dir)
    assert result2.last_loss == result.last_loss
    for k, v in encoder.model.state_dict().items():
        assert torch.equal(v, again.model.state_dict()[k])


def test_interrupted_simcse_resumes_to_the_same_weights(tiny_bert_dir, tmp_path):
    encoder, full, _ = simcse(tiny_bert_dir)
    expected = {k: v.clone() for k, v in encoder.model.state_dict().items()}

    def stop(stage, step, total):
        if step == 7:  # in epoch 2, after the checkpoint at step 6
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        simcse(tiny_bert_dir, checkpoint_dir=tmp_path / "ckpt", progress=stop)
    encoder, resumed, _ = simcse(tiny_bert_dir, checkpoint_dir=tmp_path / "ckpt")  # a new process, same command
    assert resumed.steps == full.steps and resumed.last_loss == full.last_loss
    for name, value in encoder.model.state_dict().items():
        assert torch.equal(value, expected[name]), name


def test_contrastive_training_learns_a_scalar_mix(tiny_bert_dir):
    _, _, objective = simcse(tiny_bert_dir, Recipe(pooler="mean", mixer="scalar_mix", layers=(0, 1, 2)))
    weights, _ = objective.representation.scalar_mix.fitted()
    assert weights != (0.0, 0.0, 0.0)  # the mix had nothing trainable before it was a real module


def test_pairs_cli_saves_a_model_and_reports_missing_columns(tmp_path, tiny_bert_dir, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a\tb\n" + "".join(f"query {i}\tanswer {i}\n" for i in range(12)))
    out = tmp_path / "model"
    assert (
        main(
            [
                "contrastive",
                "--mode",
                "pairs",
                "--pairs",
                str(pairs),
                "--text-col",
                "a",
                "--text-col2",
                "b",
                "--model",
                str(tiny_bert_dir),
                "--batch-size",
                "4",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    assert (out / "model.safetensors").is_file() and (out / "recipe.json").is_file()
    texts = tmp_path / "t.txt"
    texts.write_text("hello\nworld\n")
    assert main(["embed", str(texts), "--model", str(out), "--out", str(tmp_path / "v.npy")]) == 0
    assert np.load(tmp_path / "v.npy").shape == (2, 32)
    capsys.readouterr()
    code = main(
        [
            "contrastive",
            "--mode",
            "pairs",
            "--pairs",
            str(pairs),
            "--text-col",
            "a",
            "--text-col2",
            "c",
            "--model",
            str(tiny_bert_dir),
            "--out",
            str(tmp_path / "m2"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 1 and "'c'" in err and len(err.splitlines()) == 1


def test_distillation_loss_is_mse_plus_weighted_cosine_and_scores_heldout_cosine(tiny_bert_dir):
    from bertlens.training.objectives import Distillation, sentence_vectors

    encoder = Encoder(str(tiny_bert_dir))
    representation = Representation(Recipe(), trainable=True)
    texts, held = encoder.tokenize(TEXTS[:8]), encoder.tokenize(TEXTS[8:12])
    rng = np.random.default_rng(0)
    targets, held_targets = rng.normal(size=(8, 16)), rng.normal(size=(4, 16))
    projection = torch.nn.Linear(32, 16)
    objective = Distillation(encoder, representation, texts, targets, held, held_targets, projection, 0.5)
    encoder.model.eval()  # no dropout: the loss is deterministic
    rows = np.array([1, 4, 6])
    with torch.no_grad():
        student = projection(sentence_vectors(encoder, representation, texts, rows)).double().numpy()
        loss = float(objective.loss(rows))
    t = targets[rows]
    cosine = (student * t).sum(1) / np.linalg.norm(student, axis=1) / np.linalg.norm(t, axis=1)
    assert loss == pytest.approx(((student - t) ** 2).mean() + 0.5 * (1 - cosine).mean(), rel=1e-4)
    predicted = objective.predict(held)
    expected = (
        (predicted * held_targets).sum(1) / np.linalg.norm(predicted, axis=1) / np.linalg.norm(held_targets, axis=1)
    )
    assert objective.evaluate() == pytest.approx(expected.mean(), rel=1e-5)
    assert set(objective.modules()) == {"representation", "projection"}
