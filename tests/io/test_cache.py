"""Caches are verified before use: a changed, truncated or unreadable entry is rebuilt with a warning."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bertlens.encoding.encoder import Encoder
from bertlens.features.bank import build_bank
from bertlens.io.cache import cached_result, content_key, open_entry, publish, staging_dir

TEXTS = ["a good film", "a bad film", "an actor", "the plot thickens"]


def test_content_key_depends_on_settings_texts_and_arrays():
    base = content_key([1, "x"], ["a", "b"], [np.arange(3)])
    assert base == content_key([1, "x"], ["a", "b"], [np.arange(3)])
    assert (
        len(
            {
                base,
                content_key([2, "x"], ["a", "b"]),
                content_key([1, "x"], ["ab"]),
                content_key([1, "x"], ["a", "b"], [np.arange(4)]),
            }
        )
        == 4
    )  # "a"+"b" never collides with "ab"


def test_an_entry_is_trusted_only_while_every_file_matches_its_checksum(tmp_path):
    final = tmp_path / "entry"
    tmp = staging_dir(final)
    np.save(tmp / "x.npy", np.arange(5))
    publish(tmp, final, {"what": "test"})
    assert open_entry(final, "thing")["what"] == "test"
    np.save(final / "x.npy", np.arange(5) + 1)  # same size, other values
    with pytest.warns(UserWarning, match="failed its checksum"):
        assert open_entry(final, "thing") is None
    assert not final.exists()  # removed, so the caller rebuilds it


@pytest.mark.parametrize("damage", ["values", "truncate", "meta"])
def test_a_damaged_bank_is_rebuilt_not_used(tmp_path, tiny_bert_dir, damage):
    encoder = Encoder(str(tiny_bert_dir))
    bank = build_bank(encoder, TEXTS, tmp_path, poolers=("mean",), dtype="float32")
    truth = np.array(bank.layer("mean", 2))
    vectors = bank.path / "vectors.npy"
    if damage == "values":
        stored = np.load(vectors)
        np.save(vectors, stored * 0 + 7.0)
    elif damage == "truncate":
        vectors.write_bytes(vectors.read_bytes()[:100])
    else:
        (bank.path / "meta.json").write_text("{not json")
    with pytest.warns(UserWarning, match="rebuilding it"):
        again = build_bank(encoder, TEXTS, tmp_path, poolers=("mean",), dtype="float32")
    np.testing.assert_array_equal(again.layer("mean", 2), truth)


def test_a_cached_result_is_recomputed_when_its_payload_changed(tmp_path):
    path = tmp_path / "r.json"
    calls = []

    def compute():
        calls.append(1)
        return {"score": 0.5}

    assert cached_result(path, "k", compute, dict, dict) == {"score": 0.5}
    assert cached_result(path, "k", compute, dict, dict) == {"score": 0.5} and len(calls) == 1  # reused
    saved = json.loads(path.read_text())
    saved["result"]["score"] = 0.99
    path.write_text(json.dumps(saved))
    with pytest.warns(UserWarning, match="failed its checksum"):
        assert cached_result(path, "k", compute, dict, dict) == {"score": 0.5}
    assert len(calls) == 2
    assert cached_result(path, "other key", compute, dict, dict) == {"score": 0.5} and len(calls) == 3


def test_half_built_entries_of_stopped_processes_are_removed_and_live_ones_kept(tmp_path):
    import os
    import subprocess
    import sys

    from bertlens.io.cache import staging_dir

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(done.stdout)  # a process that has exited
    stale = tmp_path / f".abc.tmp{dead}"
    stale.mkdir()
    (stale / "vectors.npy").write_bytes(b"x" * 100)
    live = tmp_path / f".def.tmp{os.getppid()}"  # the parent (the test runner's shell or pytest): alive
    live.mkdir()
    fresh = staging_dir(tmp_path / "ghi")
    assert not stale.exists() and live.is_dir() and fresh.is_dir()
