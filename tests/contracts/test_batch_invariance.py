"""The same text gets the same vector whatever it is batched or ordered with."""

import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.encoding.encoder import Encoder
from bertlens.representation.recipe import Recipe


@pytest.fixture(scope="module")
def default_encoder():
    return Encoder("default", attentions="cls")


@pytest.mark.parametrize("pooler", ["mean", "cls", "max", "attention"])
def test_batch_of_32_equals_one_by_one_and_order_does_not_matter(default_encoder, sts_sentences, pooler):
    texts = sts_sentences[:32]
    embedder = Embedder(Recipe(pooler=pooler, layers=(-2, -1), mixer="mean"), encoder=default_encoder)
    default_encoder.max_batch = 32
    batched = embedder.encode(texts)
    default_encoder.max_batch = 1
    single = embedder.encode(texts)
    default_encoder.max_batch = 32
    order = np.random.default_rng(0).permutation(len(texts))
    shuffled = embedder.encode([texts[i] for i in order])
    assert np.abs(batched - single).max() <= 1e-5
    assert np.abs(shuffled - batched[order]).max() <= 1e-5
