"""The feature bank: every layer x pooler in one pass; named mixes of each non-linear pooler pooled at encode time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.features import bank as bank_module
from bertlens.features.bank import build_bank
from bertlens.probing.candidates import candidate_features, enumerate_candidates
from bertlens.representation import choices as choices_module
from bertlens.representation import poolers as poolers_module
from bertlens.representation.mixers import mix_layers
from bertlens.representation.poolers import Pooler, token_mask

TEXTS = ["a good film", "a bad film with a long and winding plot", "an actor", "the plot thickens slowly"]


def min_pool(states, mask, weights=None):
    blocked = ~mask.unsqueeze(-1)
    pooled = states.masked_fill(blocked, float("inf")).amin(dim=-2)
    return torch.where(torch.isfinite(pooled), pooled, torch.zeros_like(pooled))


def test_a_second_non_linear_pooler_gets_its_own_encode_time_mixes(tmp_path, tiny_bert_dir, monkeypatch):
    """Adding a pooler is one entry in POOLERS (and its name in choices.py); a non-linear one must not be scored
    with max's mixes."""
    monkeypatch.setitem(poolers_module.POOLERS, "min", Pooler(min_pool, linear=False))
    monkeypatch.setitem(choices_module.POOLER_READS, "min", ())  # a new pooler: what it reads, and its function
    encoder = Encoder(str(tiny_bert_dir))
    bank = build_bank(encoder, TEXTS, tmp_path, poolers=("mean", "max", "min"), dtype="float32")
    assert bank.nonlinear_poolers == ("max", "min") and bank.mixes.shape[0] == 2
    candidates = {c.name: c for c in enumerate_candidates(bank.num_layers, ("max", "min"))}
    states = next(encoder.stream(encoder.tokenize(TEXTS)))  # one batch holds all four texts
    rows = states.doc_index.numpy()
    mask = token_mask(states.attention_mask, states.special_tokens_mask, True)
    mixed = mix_layers(states.hidden, "mean", (-2, -1))  # [B, T, H]
    for name, fn in (("max", poolers_module.POOLERS["max"].fn), ("min", min_pool)):
        expected = np.zeros((len(TEXTS), encoder.hidden_size), dtype=np.float32)
        expected[rows] = fn(mixed, mask).numpy()
        got = candidate_features(bank, candidates[f"{name}/mean_last2"])
        np.testing.assert_allclose(got, expected, atol=1e-5)
    assert not np.allclose(
        candidate_features(bank, candidates["max/mean_last2"]), candidate_features(bank, candidates["min/mean_last2"])
    )
    assert "min/scalar_mix" not in candidates  # no ScalarMix for a pooler that does not commute with mixing
    assert bank_module.nonlinear(("cls", "mean", "attention")) == ()


def _rss_file_kb() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile line")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the resident set from /proc (Linux)")
def test_reading_a_mapped_bank_does_not_keep_it_resident(tmp_path):
    """At 100k texts the bank is 2.2 GB: reads must not leave it in the sweep's resident set."""
    from bertlens.features.bank import release_pages

    array = np.lib.format.open_memmap(tmp_path / "v.npy", mode="w+", dtype=np.float16, shape=(64, 2**19))  # 64 MB
    array[:] = 1.0
    release_pages(array)  # written pages leave the process too (they stay in the file)
    del array
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    before = _rss_file_kb()
    copy = np.array(mapped, dtype=np.float32)
    assert _rss_file_kb() - before > 48 * 1024  # reading maps the pages in ...
    release_pages(mapped)
    assert _rss_file_kb() - before < 8 * 1024  # ... and releasing drops them
    assert copy.sum() == 64 * 2**19 and np.load(tmp_path / "v.npy", mmap_mode="r")[63, -1] == 1.0  # nothing lost
