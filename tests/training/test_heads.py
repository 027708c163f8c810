"""Heads: outputs, losses, and the safetensors round trip."""

from __future__ import annotations

import torch

from bertlens.training.heads import Head, HeadSpec


def test_pair_head_uses_infersent_features_and_round_trips(tmp_path):
    torch.manual_seed(0)
    head = Head(HeadSpec("pair_classification", 8, 3)).eval()
    u, v = torch.randn(5, 8), torch.randn(5, 8)
    logits = head(u, v)
    assert logits.shape == (5, 3) and head.linear.in_features == 32
    head.save(tmp_path)
    loaded = Head.load(tmp_path).eval()
    torch.testing.assert_close(loaded(u, v), logits)
    assert head.predict(logits).tolist() == logits.argmax(-1).tolist()


def test_binary_head_has_one_logit_and_similarity_head_is_cosine(tmp_path):
    binary = Head(HeadSpec("classification", 4, 2))
    assert binary.linear.out_features == 1
    outputs = binary(torch.randn(3, 4))
    assert binary.loss(outputs, torch.tensor([0, 1, 1])).item() > 0
    similarity = Head(HeadSpec("similarity", 4, score_max=5.0))
    u = torch.randn(3, 4)
    torch.testing.assert_close(similarity(u, 2 * u), torch.ones(3))
    assert similarity.loss(torch.ones(3), torch.tensor([5.0, 5.0, 5.0])).item() == 0.0
    similarity.save(tmp_path)
    assert Head.load(tmp_path).spec.score_max == 5.0
