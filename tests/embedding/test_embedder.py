"""Embedder copies for concurrent worker threads (what `serve --workers` runs on)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe


@pytest.mark.parametrize("pooler", ["mean", "attention"])  # attention: [CLS] rows from hooks on the shared model
def test_copies_share_weights_own_their_tokenizer_and_encode_together(tiny_bert_dir, pooler):
    embedder = Embedder(Recipe(model=str(tiny_bert_dir), pooler=pooler))
    twin = embedder.for_thread()
    assert twin.encoder.model is embedder.encoder.model and twin.representation is embedder.representation
    assert twin.encoder.tokenizer is not embedder.encoder.tokenizer
    texts = [f"text {i} " + "word " * (i % 9) for i in range(64)]
    expected = embedder.encode(texts)
    # the original and its copy on two threads at once, four times each
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda e: e.encode(texts), [embedder, twin] * 4))
    for vectors in got:
        np.testing.assert_allclose(vectors, expected, atol=1e-5)
