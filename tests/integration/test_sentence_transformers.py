"""Pooled embeddings against sentence-transformers, and bf16 against fp32."""

import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe


def cosine(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def fp32_vectors(sts_sentences):
    return Embedder(Recipe()).encode(sts_sentences)


def test_mean_pooling_matches_sentence_transformers(default_model_dir, sts_sentences, fp32_vectors):
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(default_model_dir), device="cpu").encode(sts_sentences, batch_size=32)
    assert cosine(fp32_vectors, reference).min() >= 0.99999


def test_bf16_stays_within_cosine_tolerance(sts_sentences, fp32_vectors):
    fast = Embedder(Recipe(precision="bf16")).encode(sts_sentences)
    assert cosine(fast, fp32_vectors).min() >= 0.9999
