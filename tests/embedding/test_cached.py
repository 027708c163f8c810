"""Cached vectors: the second call reads the verified entry, other texts get their own entry, a damaged file
is recomputed with a warning."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.embedding.cached import cached_vectors, vectors_key
from bertlens.embedding.embedder import Embedder

TEXTS = ["the first text", "a second one", "and a third"]


def test_vectors_are_computed_once_and_verified(tiny_bert_dir, tmp_path, monkeypatch):
    embedder = Embedder(model=str(tiny_bert_dir))
    first = cached_vectors(embedder, TEXTS, tmp_path)
    np.testing.assert_array_equal(first, embedder.encode(TEXTS))
    calls = []
    original = embedder.encode
    monkeypatch.setattr(embedder, "encode", lambda texts, progress=None: calls.append(len(texts)) or original(texts))
    np.testing.assert_array_equal(cached_vectors(embedder, TEXTS, tmp_path), first)
    assert calls == []  # read from the cache
    cached_vectors(embedder, [*TEXTS, "a fourth"], tmp_path)
    assert calls == [4]  # other texts: another entry
    entry = tmp_path / "vectors" / vectors_key(embedder, TEXTS)
    with open(entry / "vectors.safetensors", "r+b") as handle:
        handle.seek(-4, 2)
        handle.write(b"\x00\x00\x80\x7f")  # one float changed to infinity
    with pytest.warns(UserWarning, match="failed its checksum"):
        again = cached_vectors(embedder, TEXTS, tmp_path)
    assert calls == [4, 3]  # recomputed, not read
    np.testing.assert_array_equal(again, first)
