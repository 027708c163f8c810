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


def test_a_mapped_float16_block_is_read_as_its_own_exact_float32_copy(tmp_path):
    """The conversion PyTorch makes (on every core) gives numpy's float16 -> float32 values to the bit, from a
    read-only map and from a gathered block alike, and the copy is the reader's own."""
    from bertlens.features.bank import _float32

    values = np.random.default_rng(0).standard_normal((300, 96)).astype(np.float16)
    values[0, :4] = (np.inf, -np.inf, 65504, 6e-8)  # the ends of float16: infinities, its largest, a subnormal
    np.save(tmp_path / "v.npy", values)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    rows = np.array([5, 0, 299, 17])
    for block in (mapped, mapped[rows], mapped[10:20]):
        copy = _float32(block, mapped)
        assert copy.dtype == np.float32 and np.array_equal(copy, np.asarray(block).astype(np.float32))
        assert copy.flags.writeable and not np.shares_memory(copy, mapped)
    assert np.array_equal(_float32(mapped, mapped)[0, :4], [np.inf, -np.inf, 65504, np.float16(6e-8)])


def test_a_scalar_mix_read_from_the_stored_vectors_equals_the_mix_of_their_float32_layers(tmp_path, monkeypatch):
    """Bank.mixed mixes the float16 file block by block (MIX_BLOCK small here, so a block ends mid-array), a part
    of the rows at a time (MIX_ROWS small, so parts end mid-block), releasing the file's pages after each part; the
    same values, to the bit, as mix_pooled over each layer's float32 copy, for all rows and for gathered ones."""
    import bertlens.features.bank as bank_module
    import bertlens.representation.mixers as mixers
    from bertlens.features.bank import Bank

    rng = np.random.default_rng(0)
    np.save(tmp_path / "vectors.npy", rng.standard_normal((2, 4, 301, 24)).astype(np.float16))  # [P, L+1, N, H]
    vectors = np.load(tmp_path / "vectors.npy", mmap_mode="r")
    bank = Bank(tmp_path, vectors, None, ("cls", "mean"), (), 301, {})
    weights = rng.standard_normal(3)
    layers = (1, 2, 3)
    monkeypatch.setattr(mixers, "MIX_BLOCK", 24 * 7)  # 7 rows a block: 301 rows = 43 blocks
    monkeypatch.setattr(bank_module, "MIX_ROWS", 64)  # 301 rows: 5 parts; the 5 gathered rows: 1
    released = []
    monkeypatch.setattr(bank_module, "release_pages", lambda mapped: released.append(mapped is vectors))
    for rows, parts in ((None, 5), (np.array([300, 0, 7, 7, 150]), 1)):
        released.clear()
        mixed = bank.mixed("mean", layers, weights, rows)
        assert released == [True] * parts  # the file's pages given back after every part
        expected = mixers.softmax(weights)[0] * bank.layer("mean", 1, rows)
        for p, k in zip(mixers.softmax(weights)[1:], layers[1:], strict=True):
            expected += p * bank.layer("mean", k, rows)
        assert mixed.dtype == np.float32 and np.array_equal(mixed, expected)


class _Stopped(Exception):
    pass


MANY = [f"text {i} " + "word " * (i % 9) + ("a long tail of words " * (i % 3)) for i in range(24)]


def _stop_after(calls: int):
    seen = []

    def progress(stage, done, total):
        seen.append(done)
        if len(seen) == calls:
            raise _Stopped

    return progress


def _partial(cache: Path) -> Path:
    (found,) = (cache / "banks").glob(".*.partial")
    return found


def _rows_encoded(encoder, monkeypatch) -> list[int]:
    counts: list[int] = []
    forward = encoder.forward

    def counting_forward(tokenized, rows, **kwargs):
        counts.append(len(rows))
        return forward(tokenized, rows, **kwargs)

    monkeypatch.setattr(encoder, "forward", counting_forward)
    return counts


@pytest.mark.parametrize("long_text", [None, "windows"])
def test_a_stopped_bank_build_resumes_from_its_last_checkpoint(tmp_path, tiny_bert_dir, monkeypatch, long_text):
    from bertlens.encoding.chunking import parse_long_text

    monkeypatch.setattr(bank_module, "CHECKPOINT_SECONDS", 0.0)  # a checkpoint after every batch (or group)
    monkeypatch.setattr(bank_module, "PIECE_GROUP", 4)
    strategy = parse_long_text(long_text) if long_text else None
    encoder = Encoder(str(tiny_bert_dir), max_batch=4, max_length=16)
    options = {"poolers": ("mean", "max"), "dtype": "float32", "long_text": strategy}
    with pytest.raises(_Stopped):
        build_bank(encoder, MANY, tmp_path / "a", progress=_stop_after(3), **options)
    done = np.load(_partial(tmp_path / "a") / "done.npy")
    assert 0 < done.sum() < len(MANY)
    encoded = _rows_encoded(encoder, monkeypatch)
    resumed = build_bank(encoder, MANY, tmp_path / "a", **options)
    if long_text is None:
        assert sum(encoded) == len(MANY) - done.sum()  # only the rows the first run did not finish
    assert not list((tmp_path / "a" / "banks").glob(".*.partial")) and not (resumed.path / "done.npy").exists()
    whole = build_bank(Encoder(str(tiny_bert_dir), max_batch=4, max_length=16), MANY, tmp_path / "b", **options)
    np.testing.assert_allclose(resumed.vectors, whole.vectors, atol=1e-5)
    np.testing.assert_allclose(resumed.mixes, whole.mixes, atol=1e-5)
    assert resumed.meta["truncated"] == whole.meta["truncated"]


def test_a_partial_bank_that_does_not_match_is_started_again(tmp_path, tiny_bert_dir, monkeypatch):
    monkeypatch.setattr(bank_module, "CHECKPOINT_SECONDS", 0.0)
    encoder = Encoder(str(tiny_bert_dir), max_batch=4, max_length=16)
    with pytest.raises(_Stopped):
        build_bank(encoder, MANY, tmp_path / "a", poolers=("mean",), dtype="float32", progress=_stop_after(2))
    np.save(_partial(tmp_path / "a") / "done.npy", np.ones(len(MANY) + 1, dtype=bool))  # not this bank's rows
    encoded = _rows_encoded(encoder, monkeypatch)
    bank = build_bank(encoder, MANY, tmp_path / "a", poolers=("mean",), dtype="float32")
    assert sum(encoded) == len(MANY)
    whole = build_bank(encoder, MANY, tmp_path / "b", poolers=("mean",), dtype="float32")
    np.testing.assert_allclose(bank.vectors, whole.vectors, atol=1e-5)


def test_a_bank_another_process_is_building_is_left_alone(tmp_path, tiny_bert_dir, monkeypatch):
    import fcntl

    monkeypatch.setattr(bank_module, "CHECKPOINT_SECONDS", 0.0)
    encoder = Encoder(str(tiny_bert_dir), max_batch=4, max_length=16)
    with pytest.raises(_Stopped):
        build_bank(encoder, MANY, tmp_path, poolers=("mean",), dtype="float32", progress=_stop_after(2))
    partial = _partial(tmp_path)
    before = np.load(partial / "done.npy")
    with open(partial.with_name(partial.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as a live process building it holds it
        encoded = _rows_encoded(encoder, monkeypatch)
        bank = build_bank(encoder, MANY, tmp_path, poolers=("mean",), dtype="float32")
    assert sum(encoded) == len(MANY)  # built from zero in a private directory
    np.testing.assert_array_equal(np.load(partial / "done.npy"), before)  # the other's work untouched
    assert bank.texts == len(MANY)


def test_a_bank_with_dropout_on_never_resumes(tmp_path, tiny_bert_dir, monkeypatch):
    """A seeded dropout view encoded again after a stop would draw other masks than one uninterrupted run."""
    monkeypatch.setattr(bank_module, "CHECKPOINT_SECONDS", 0.0)
    encoder = Encoder(str(tiny_bert_dir), max_batch=4, max_length=16)
    options = {"poolers": ("mean",), "dtype": "float32", "variant": "dropout:1"}
    with encoder.dropout_active(1), pytest.raises(_Stopped):
        build_bank(encoder, MANY, tmp_path / "a", progress=_stop_after(2), **options)
    assert not list((tmp_path / "a" / "banks").glob(".*.partial"))  # nothing kept to resume from
    with encoder.dropout_active(1):
        encoded = _rows_encoded(encoder, monkeypatch)
        stopped_then_run = build_bank(encoder, MANY, tmp_path / "a", **options)
    assert sum(encoded) == len(MANY)
    with encoder.dropout_active(1):
        whole = build_bank(encoder, MANY, tmp_path / "b", **options)
    np.testing.assert_array_equal(stopped_then_run.vectors, whole.vectors)


def test_a_staged_bank_encodes_only_its_rows_and_the_whole_bank_carries_on_from_them(
    tmp_path, tiny_bert_dir, monkeypatch
):
    """A staged sweep asks for growing sets of rows under the key of every text: each call encodes only the rows not
    done yet, the bank stays unpublished until every row is asked for, and the result equals a bank built at once."""
    encoder = Encoder(str(tiny_bert_dir), max_batch=4, max_length=16)
    options = {"poolers": ("mean", "max"), "dtype": "float32"}
    first, more = np.arange(0, len(MANY), 3), np.arange(0, len(MANY), 2)
    encoded = _rows_encoded(encoder, monkeypatch)
    with bank_module.stage_rows(first):
        stage = build_bank(encoder, MANY, tmp_path / "a", **options)
    assert sum(encoded) == len(first) and stage.meta["partial"]
    assert not [p for p in (tmp_path / "a" / "banks").iterdir() if not p.name.startswith(".")]  # nothing published
    whole = build_bank(Encoder(str(tiny_bert_dir), max_batch=4, max_length=16), MANY, tmp_path / "b", **options)
    np.testing.assert_allclose(stage.vectors[:, :, first], whole.vectors[:, :, first], atol=1e-5)
    np.testing.assert_allclose(stage.mixes[:, :, first], whole.mixes[:, :, first], atol=1e-5)
    encoded.clear()
    with bank_module.stage_rows(more):
        build_bank(encoder, MANY, tmp_path / "a", **options)
    assert sum(encoded) == len(np.setdiff1d(more, first))  # only the new rows
    encoded.clear()
    final = build_bank(encoder, MANY, tmp_path / "a", **options)
    assert sum(encoded) == len(MANY) - len(np.union1d(first, more))
    assert "partial" not in final.meta and not list((tmp_path / "a" / "banks").glob(".*.partial"))
    np.testing.assert_allclose(final.vectors, whole.vectors, atol=1e-5)
    assert final.meta["truncated"] == whole.meta["truncated"]
