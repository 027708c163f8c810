"""The training loop: what strategies freeze, when gradual unfreezing happens, learning rates, resume."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.representation.apply import Representation
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import Split
from bertlens.training.blocks import parameters_by_block
from bertlens.training.config import TrainConfig
from bertlens.training.heads import Head, HeadSpec
from bertlens.training.loop import fine_tune, lr_factor
from bertlens.training.objectives import Encoded, Supervised
from bertlens.training.strategies import parse_strategy

WORDS = ["good", "great", "fine", "bad", "awful", "poor", "movie", "plot", "actor", "really", "not", "very"]
CONFIG = TrainConfig(epochs=3, min_steps=1, batch_size=8, patience=10, checkpoint_every=2, lr=1e-3, head_lr=1e-2)


def split(n: int, seed: int) -> Split:
    rng = np.random.default_rng(seed)
    texts = tuple(" ".join(rng.choice(WORDS, 5)) for _ in range(n))
    labels = np.array([int(sum(w in ("good", "great", "fine") for w in t.split()) >= 1) for t in texts])
    return Split(texts, None, labels)


@pytest.fixture
def setup(tiny_bert_dir):
    def make():
        encoder = Encoder(str(tiny_bert_dir))
        torch.manual_seed(0)
        head = Head(HeadSpec("classification", encoder.hidden_size, 2))
        return encoder, head, Encoded.of(encoder, split(32, 0)), Encoded.of(encoder, split(16, 1))

    return make


def train(setup_tuple, recipe, strategy, config, **kwargs):
    """fine_tune with the supervised objective on the recipe (its ScalarMix trainable)."""
    encoder, head, train_data, dev = setup_tuple
    objective = Supervised(encoder, Representation(recipe, trainable=True), head, train_data, dev, "classification")
    return fine_tune(encoder, objective, parse_strategy(strategy, 2), config, **kwargs), objective


def interrupt_at(stop_step: int):
    """A progress callback that kills the run (as Ctrl-C would) when it reaches `stop_step`."""

    def stop(stage, step, total):
        if step == stop_step:
            raise KeyboardInterrupt

    return stop


def snapshot(model) -> list[dict[str, torch.Tensor]]:
    return [{k: v.detach().clone() for k, v in block.items()} for block in parameters_by_block(model)]


def changed(before: dict, after: dict) -> bool:
    return any(not torch.equal(before[k], after[k]) for k in before)


def test_partial_keeps_frozen_blocks_bit_identical(setup):
    encoder, head, train_data, dev = setup()
    before = snapshot(encoder.model)
    train((encoder, head, train_data, dev), Recipe(pooler="mean"), "partial:1", replace(CONFIG, epochs=1))[0]
    after = snapshot(encoder.model)
    assert [changed(b, a) for b, a in zip(before, after)] == [False, False, True]  # embeddings, layer 1 frozen


def test_gradual_unfreezes_top_down_at_epoch_boundaries(setup):
    encoder, head, train_data, dev = setup()
    seen = {}

    def record(stage, step, total):
        seen[step] = tuple(
            i
            for i, block in enumerate(parameters_by_block(encoder.model))
            if any(p.grad is not None for p in block.values())
        )

    train((encoder, head, train_data, dev), Recipe(pooler="mean"), "gradual", CONFIG, progress=record)
    # 32 examples / batch 8 = 4 steps an epoch: epoch 0 trains layer 2, epoch 1 layers 1-2, epoch 2 everything
    assert [seen[s] for s in (1, 4, 5, 8, 9, 12)] == [(2,), (2,), (1, 2), (1, 2), (0, 1, 2), (0, 1, 2)]


def test_layerwise_groups_carry_their_learning_rates(setup, monkeypatch):
    encoder, head, train_data, dev = setup()
    captured = {}
    original = torch.optim.AdamW.__init__

    def spy(self, groups, **kwargs):
        captured["groups"] = [(g["block"], g["base_lr"]) for g in groups]
        original(self, groups, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "__init__", spy)
    train((encoder, head, train_data, dev), Recipe(pooler="mean"), "llrd:0.5", replace(CONFIG, epochs=1))[0]
    rates = dict(captured["groups"])
    assert rates == {0: 0.25e-3, 1: 0.5e-3, 2: 1e-3, -1: 1e-2}  # embeddings, layer 1, layer 2, head


def test_schedule_warms_up_then_decays():
    assert [round(lr_factor(s, 10, 2), 3) for s in range(10)] == [
        0.5,
        1.0,
        1.0,
        0.875,
        0.75,
        0.625,
        0.5,
        0.375,
        0.25,
        0.125,
    ]


def assert_resumes_exactly(setup, config, stop_step: int, directory, full, expected) -> None:
    """Killed at `stop_step`, then resumed in a fresh 'process': the same dev history, steps and weights as `full`."""
    with pytest.raises(KeyboardInterrupt):
        train(
            setup(), Recipe(pooler="mean"), "full", config, checkpoint_dir=directory, progress=interrupt_at(stop_step)
        )
    fresh = setup()  # a new process: fresh weights, resumed from the checkpoint
    resumed = train(fresh, Recipe(pooler="mean"), "full", config, checkpoint_dir=directory)[0]
    assert resumed.history == full.history and resumed.steps == full.steps
    for name, value in fresh[0].model.state_dict().items():
        assert torch.equal(value, expected[name]), name


def test_interrupted_run_resumes_to_the_same_weights(setup, tmp_path):
    encoder, head, train_data, dev = setup()
    full = train((encoder, head, train_data, dev), Recipe(pooler="mean"), "full", CONFIG)[0]
    expected = {k: v.clone() for k, v in encoder.model.state_dict().items()}
    assert_resumes_exactly(setup, CONFIG, 7, tmp_path / "ckpt", full, expected)  # mid-epoch, after step 6's checkpoint


def test_checkpoint_of_another_run_is_refused(setup, tmp_path):
    encoder, head, train_data, dev = setup()
    train(
        (encoder, head, train_data, dev),
        Recipe(pooler="mean"),
        "full",
        replace(CONFIG, epochs=1),
        checkpoint_dir=tmp_path / "ckpt",
    )[0]
    encoder, head, train_data, dev = setup()
    from bertlens.errors import BertlensError

    with pytest.raises(BertlensError, match="different run"):
        train(
            (encoder, head, train_data, dev),
            Recipe(pooler="cls"),
            "full",
            replace(CONFIG, epochs=1),
            checkpoint_dir=tmp_path / "ckpt",
        )[0]


def test_fine_tuning_a_scalar_mix_recipe_trains_the_encoder_and_the_mix(setup):
    """The ScalarMix used to run under no_grad: only the head trained. Now both the mix and the encoder do."""
    encoder, head, train_data, dev = setup()
    recipe = Recipe(pooler="mean", mixer="scalar_mix", layers=(0, 1, 2))
    before = snapshot(encoder.model)
    _, objective = train((encoder, head, train_data, dev), recipe, "full", replace(CONFIG, epochs=1))
    after = snapshot(encoder.model)
    assert all(changed(b, a) for b, a in zip(before, after))  # embeddings and both layers moved
    weights, gamma = objective.representation.scalar_mix.fitted()
    assert weights != (0.0, 0.0, 0.0) and gamma != 1.0


def test_serving_a_fitted_scalar_mix_recipe_reproduces_the_trained_vectors(setup, tmp_path):
    from bertlens.embedding.embedder import Embedder

    encoder, head, train_data, dev = setup()
    recipe = Recipe(model=encoder.ref.name, pooler="mean", mixer="scalar_mix", layers=(0, 1, 2))
    _, objective = train((encoder, head, train_data, dev), recipe, "full", replace(CONFIG, epochs=1))
    fitted = objective.representation.fitted_recipe()
    loaded = Recipe.load(fitted.save(tmp_path / "recipe.json"))
    assert loaded.mix_weights == fitted.mix_weights and loaded.mix_gamma == fitted.mix_gamma
    texts = ["good movie", "awful plot really", "the actor was fine"]
    served = Embedder(loaded, encoder=encoder).encode(texts)  # a frozen ScalarMix built from the saved recipe
    with torch.no_grad():
        from bertlens.training.objectives import sentence_vectors

        tokenized = encoder.tokenize(texts)
        trained = sentence_vectors(encoder, objective.representation, tokenized, np.arange(len(texts))).numpy()
    np.testing.assert_array_equal(served, trained)


def test_a_damaged_checkpoint_is_not_resumed_from(setup, tmp_path):
    encoder, head, train_data, dev = setup()
    stop = interrupt_at(7)
    with pytest.raises(KeyboardInterrupt):
        train(
            (encoder, head, train_data, dev),
            Recipe(pooler="mean"),
            "full",
            CONFIG,
            checkpoint_dir=tmp_path / "c",
            progress=stop,
        )
    weights = tmp_path / "c" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-64] + bytes(64))  # damaged on disk
    seen = []
    encoder, head, train_data, dev = setup()
    with pytest.warns(UserWarning, match="is damaged"):
        train(
            (encoder, head, train_data, dev),
            Recipe(pooler="mean"),
            "full",
            CONFIG,
            checkpoint_dir=tmp_path / "c",
            progress=lambda stage, step, total: seen.append(step),
        )
    assert seen[0] == 1  # started over, not from step 6 with wrong weights


def test_many_tiny_epochs_checkpoint_every_n_steps_not_every_epoch(setup, tmp_path, monkeypatch):
    """32 examples at batch 32 make one step an epoch; 12 steps with checkpoint_every=5 save at 5, 10 and the end
    (a checkpoint per epoch cost recommend's budget more than the steps did), and the run still resumes exactly."""
    import bertlens.training.loop as loop

    config = replace(CONFIG, batch_size=32, epochs=12, checkpoint_every=5, patience=100)
    saved = []
    real = loop.save_checkpoint
    monkeypatch.setattr(
        loop, "save_checkpoint", lambda d, m, o, state, *a: (saved.append(state["step"]), real(d, m, o, state, *a))
    )
    encoder, head, train_data, dev = setup()
    full = train(
        (encoder, head, train_data, dev), Recipe(pooler="mean"), "full", config, checkpoint_dir=tmp_path / "a"
    )[0]
    assert full.steps == 12 and saved == [5, 10, 12]
    expected = {k: v.clone() for k, v in encoder.model.state_dict().items()}
    assert_resumes_exactly(setup, config, 9, tmp_path / "b", full, expected)  # from step 5: steps 6-8 run again


def test_dev_is_scored_every_eval_every_steps_and_patience_counts_scores(setup, tmp_path, monkeypatch):
    """One step an epoch, 12 epochs, eval_every=5: dev is scored at steps 5, 10 and 12 (the schedule's end), not
    after each of the 12 epochs; `scored_epochs` (recommend's estimate) counts the same, and the run resumes
    exactly from a checkpoint taken between two scores."""
    from bertlens.training import loop

    config = replace(CONFIG, batch_size=32, epochs=12, checkpoint_every=4, patience=100, eval_every=5)
    scored_at = []
    real = Supervised.evaluate
    monkeypatch.setattr(Supervised, "evaluate", lambda self: (scored_at.append(len(scored_at)), real(self))[1])
    encoder, head, train_data, dev = setup()
    full = train((encoder, head, train_data, dev), Recipe(pooler="mean"), "full", config)[0]
    assert full.steps == 12 and full.epochs_run == 12
    assert len(full.history) == len(scored_at) == 3 == loop.scored_epochs(1, 12, 5)
    assert loop.scored_epochs(1, 12, 0) == 12 and loop.scored_epochs(4, 100, 25) == 4
    assert loop.scored_epochs(16, 112, 25) == 4 and loop.scored_epochs(25, 100, 25) == 4
    expected = {k: v.clone() for k, v in encoder.model.state_dict().items()}
    assert_resumes_exactly(setup, config, 7, tmp_path / "ckpt", full, expected)  # from step 4: before the 5th score


def test_early_stopping_counts_dev_scores_not_epochs(setup):
    """patience=1 with dev scored every 3 one-step epochs: a run stops at a score that fails to improve, on an epoch
    end that scored dev (a multiple of 3 steps), and keeps the best weights."""
    config = replace(CONFIG, batch_size=32, epochs=30, patience=1, eval_every=3, lr=0.0, head_lr=0.0)
    result = train(setup(), Recipe(pooler="mean"), "full", config)[0]
    # lr 0: nothing changes, so the second score equals the first and does not improve on it
    assert result.history[0] == result.history[1] and len(result.history) == 2
    assert result.steps == 6 and result.epochs_run == 6 and result.stopped_early
