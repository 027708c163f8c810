"""Named arrays in one safetensors file: written atomically and read back as written; a missing or foreign file is
one line naming it."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.errors import BertlensError
from bertlens.io.arrays import read_arrays, save_arrays


def test_arrays_and_metadata_round_trip_and_nothing_is_left_beside_them(tmp_path):
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1, 2], dtype=np.int64)}
    path = save_arrays(tmp_path / "x.safetensors", arrays, {"version": "1"})
    got, meta = read_arrays(path, "test file")
    assert meta == {"version": "1"} and set(got) == {"a", "b"}
    np.testing.assert_array_equal(got["a"], arrays["a"])
    assert [p.name for p in tmp_path.iterdir()] == ["x.safetensors"]


def test_a_missing_or_foreign_file_is_one_line(tmp_path):
    with pytest.raises(BertlensError, match=r"^test file .*nope.safetensors does not exist$"):
        read_arrays(tmp_path / "nope.safetensors", "test file")
    (tmp_path / "bad.safetensors").write_bytes(b"\x00" * 16)
    with pytest.raises(BertlensError, match="not a readable safetensors file"):
        read_arrays(tmp_path / "bad.safetensors", "test file")
