"""Every candidate computed from the bank equals what `Embedder(candidate.recipe())` produces."""

import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.encoding.encoder import Encoder
from bertlens.features.bank import build_bank
from bertlens.probing.candidates import candidate_features, enumerate_candidates
from bertlens.representation.recipe import Recipe

TEXTS = ["a man plays the guitar", "the cat", "rain over the quiet town tonight", "hello there, friend!", "ok"]


@pytest.fixture(scope="module")
def bank_and_model(tiny_bert_dir, tmp_path_factory):
    encoder = Encoder(str(tiny_bert_dir), attentions="cls")
    return build_bank(encoder, TEXTS, tmp_path_factory.mktemp("cache"), dtype="float32"), str(tiny_bert_dir)


def test_candidates_cover_every_layer_pooler_and_mix(bank_and_model):
    bank, _ = bank_and_model
    names = {c.name for c in enumerate_candidates(bank.num_layers, ("cls", "mean", "max", "attention"))}
    assert {f"{p}/L{k}" for p in ("cls", "mean", "max", "attention") for k in range(3)} <= names
    assert {"mean/mean_last2", "mean/first_last", "mean/mean_all", "mean/concat_last3", "mean/scalar_mix"} <= names
    assert "max/scalar_mix" not in names  # needs a second pass; the sweep says so


def test_bank_features_equal_the_recipe_embeddings(bank_and_model):
    bank, model = bank_and_model
    rng = np.random.default_rng(0)
    for candidate in enumerate_candidates(bank.num_layers, bank.poolers):
        weights = rng.normal(size=len(candidate.layers)) if candidate.mixer == "scalar_mix" else None
        from_bank = candidate_features(bank, candidate, mix_weights=weights)
        recipe = candidate.recipe(Recipe(model=model), None if weights is None else tuple(weights))
        direct = Embedder(recipe).encode(TEXTS)
        assert np.abs(from_bank - direct).max() <= 1e-4, candidate.name


def test_bank_is_reused_from_the_cache(bank_and_model, tiny_bert_dir):
    bank, _ = bank_and_model
    again = build_bank(Encoder(str(tiny_bert_dir), attentions="cls"), TEXTS, bank.path.parent.parent, dtype="float32")
    assert again.path == bank.path and np.array_equal(np.asarray(again.vectors), np.asarray(bank.vectors))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_features_written_into_a_stack_equal_new_arrays_to_the_bit(tiny_bert_dir, tmp_path, dtype):
    bank = build_bank(Encoder(str(tiny_bert_dir), attentions="cls"), TEXTS, tmp_path, dtype=dtype)
    rng = np.random.default_rng(1)
    for rows in (None, np.arange(len(TEXTS)), np.array([3, 0, 4, 4, 1])):
        for candidate in enumerate_candidates(bank.num_layers, bank.poolers):
            weights = rng.normal(size=len(candidate.layers)) if candidate.mixer == "scalar_mix" else None
            alone = candidate_features(bank, candidate, rows, weights)  # [n, D], a new array
            stacked = np.full((2, *alone.shape), np.nan, dtype=np.float32)  # [2, n, D]: written into its second slot
            returned = candidate_features(bank, candidate, rows, weights, out=stacked[1])
            assert returned is stacked[1] or np.shares_memory(returned, stacked[1]), candidate.name
            assert np.array_equal(stacked[1], alone) and np.isnan(stacked[0]).all(), (candidate.name, rows)
