"""Masked-LM pieces of the one training loop: the head (own or tied), loss at masked positions, resume."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.encoding.token_stream import StreamRows, build_token_stream
from bertlens.training.config import TrainConfig
from bertlens.training.loop import fine_tune
from bertlens.training.mlm_head import mlm_head
from bertlens.training.objectives import MaskedLM
from bertlens.training.strategies import parse_strategy
from tests.conftest import DATA, SHARED

RAW = SHARED / "models" / "tiny-raw-bert"


def test_a_model_without_an_mlm_head_gets_one_tied_to_its_embeddings(tiny_bert_dir):
    encoder = Encoder(str(tiny_bert_dir))
    head, origin = mlm_head(encoder.model, tiny_bert_dir)
    embeddings = encoder.model.get_input_embeddings().weight
    assert not origin.loaded and "tied to the input embeddings" in origin.note
    assert head.cls.predictions.decoder.weight is embeddings  # one parameter: the head reproduces the embedding matrix
    with torch.no_grad():
        embeddings[5, 0] += 1.0
    assert torch.equal(head.cls.predictions.decoder.weight, embeddings)


def test_the_checkpoints_own_head_matches_hugging_face():
    from transformers import BertForMaskedLM

    encoder = Encoder(str(RAW))
    head, origin = mlm_head(encoder.model, RAW)
    assert origin.loaded
    reference = BertForMaskedLM.from_pretrained(RAW).eval()
    batch = encoder.tokenizer(["the film was [MASK] and long", "a [MASK] day"], padding=True, return_tensors="pt")
    with torch.no_grad():
        ours = head(encoder.model(**batch).last_hidden_state)  # [B, T, V]
        theirs = reference(**batch).logits
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)


def review_rows(encoder: Encoder, cache, length: int = 48) -> StreamRows:
    """Packed rows of movie-review text from a token stream (the path `pretrain` takes)."""
    import json

    with open(DATA / "movie_reviews" / "reviews.jsonl", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"][:2000] for line, _ in zip(handle, range(40), strict=False)]
    tok = encoder.tokenizer
    stream = build_token_stream(texts, tok, encoder.ref.fingerprint, "reviews", cache)
    return StreamRows(stream, length, tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)


def train_mlm(cache, steps_stop: int | None = None, checkpoint=None):
    encoder = Encoder(str(RAW))
    head, _ = mlm_head(encoder.model, RAW)
    rows = review_rows(encoder, cache)
    objective = MaskedLM(encoder, head, rows.part(np.arange(40)), rows.part(np.arange(40, 48)))
    before = objective.heldout_loss()

    def stop(stage, step, total):
        if step == steps_stop:
            raise KeyboardInterrupt

    config = TrainConfig(lr=5e-4, head_lr=5e-4, epochs=3, min_steps=0, batch_size=8, patience=10, checkpoint_every=4)
    result = fine_tune(encoder, objective, parse_strategy("full", 6), config, checkpoint_dir=checkpoint, progress=stop)
    return encoder, objective, before, result


def test_masked_lm_training_lowers_the_heldout_loss(tmp_path):
    _, objective, before, result = train_mlm(tmp_path / "cache")
    assert result.steps == 15 and len(result.history) == 3
    assert objective.heldout_loss() < before  # in-domain text: the loss falls
    assert np.isfinite(result.first_loss) and result.last_loss < result.first_loss


def test_interrupted_masked_lm_training_resumes_to_the_same_weights(tmp_path):
    encoder, _, _, full = train_mlm(tmp_path / "cache")
    expected = {k: v.clone() for k, v in encoder.model.state_dict().items()}
    with pytest.raises(KeyboardInterrupt):
        train_mlm(
            tmp_path / "cache", steps_stop=7, checkpoint=tmp_path / "c"
        )  # after the checkpoint at step 4, mid-epoch 2
    encoder, _, _, resumed = train_mlm(tmp_path / "cache", checkpoint=tmp_path / "c")
    assert resumed.history == full.history
    for name, value in encoder.model.state_dict().items():
        assert torch.equal(value, expected[name]), name
