"""The sweep end to end on small slices: structure, determinism, recipes that reproduce vectors."""

import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.encoding.encoder import Encoder
from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.probing.candidates import candidate_features
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import load_catalog_task
from tests.conftest import DATA

CONFIG = SweepConfig(resamples=200, bank_dtype="float32")


@pytest.fixture(scope="module")
def tiny_encoder(tiny_bert_dir):
    return Encoder(str(tiny_bert_dir), attentions="cls")


@pytest.fixture(scope="module")
def sst2_result(tiny_encoder, tmp_path_factory):
    task = load_catalog_task(get_task("sst2"), DATA, max_examples=150)
    return run_sweep(task, tiny_encoder, Recipe(model=tiny_encoder.ref.name), tmp_path_factory.mktemp("c"), CONFIG)


def test_classification_sweep_scores_every_candidate(sst2_result):
    probe = sst2_result.protocols["probe"]
    assert set(sst2_result.protocols) == {"probe"} and probe.n_test == 150
    # 2-layer model: 3 singles and 3 named mixes (no mean_last4) per pooler, concat, ScalarMix for linear poolers
    assert len(probe.candidates) == 4 * 3 + 4 * 3 + 4 + 3
    t = probe.test
    assert np.isfinite(t.value).all() and (t.low <= t.value + 1e-12).all() and (t.value <= t.high + 1e-12).all()
    assert t.tied_with_best[t.best]
    assert set(probe.mix_weights) == {"cls/scalar_mix", "mean/scalar_mix", "attention/scalar_mix"}


def test_same_seed_same_numbers(sst2_result, tiny_encoder, tmp_path):
    task = load_catalog_task(get_task("sst2"), DATA, max_examples=150)
    again = run_sweep(task, tiny_encoder, Recipe(model=tiny_encoder.ref.name), tmp_path, CONFIG)
    a, b = sst2_result.protocols["probe"], again.protocols["probe"]
    assert np.array_equal(a.test.value, b.test.value) and np.array_equal(a.test.low, b.test.low)
    assert again.recipe == sst2_result.recipe


def test_similarity_sweep_has_both_protocols_and_recipe_reproduces_vectors(tiny_encoder, tmp_path):
    task = load_catalog_task(get_task("stsb"), DATA, max_examples=120)
    result = run_sweep(task, tiny_encoder, Recipe(model=tiny_encoder.ref.name), tmp_path, CONFIG)
    assert set(result.protocols) == {"cosine", "probe"}
    cosine = result.protocols["cosine"]
    assert "mean/scalar_mix" in cosine.mix_weights
    # the recommended recipe, and the learned ScalarMix recipe, embed exactly as the sweep scored them
    from bertlens.features.bank import build_bank

    texts = task.all_texts()
    bank = build_bank(tiny_encoder, texts, tmp_path, dtype="float32")
    for name in (result.recommended.name, "mean/scalar_mix"):
        candidate = next(c for c in cosine.candidates if c.name == name)
        weights = cosine.mix_weights.get(name)
        recipe = candidate.recipe(Recipe(model=tiny_encoder.ref.name), weights)
        direct = Embedder(recipe).encode(texts[:40])
        assert np.abs(candidate_features(bank, candidate, np.arange(40), weights) - direct).max() <= 1e-4


def test_cross_validated_task_scores_every_example(tiny_encoder, tmp_path):
    task = load_catalog_task(get_task("subj"), DATA, max_examples=200)
    result = run_sweep(
        task,
        tiny_encoder,
        Recipe(model=tiny_encoder.ref.name),
        tmp_path,
        SweepConfig(resamples=100, poolers=("mean", "cls")),
    )
    assert result.protocols["probe"].n_test == 200
    assert "inner" in result.basis
