"""What the tests of the Python front doors share."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_model_loads(monkeypatch):
    """Any model or tokenizer load fails the test: the options must be refused before anything loads."""
    import bertlens.encoding.encoder as encoder

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the options were checked")

    monkeypatch.setattr(encoder, "load_encoder", refuse)
    monkeypatch.setattr(encoder, "load_tokenizer", refuse)
