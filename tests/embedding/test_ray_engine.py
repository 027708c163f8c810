"""`embed --engine ray` on a local Ray instance with 2 workers writes what the local engine writes: same ids,
same order, vectors within 1e-5 (a shard split across both actors)."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from bertlens.cli.main import main

ray = pytest.importorskip("ray")


@pytest.mark.extended  # starts a Ray cluster (17 s); an optional engine
def test_ray_engine_equals_the_local_engine(tiny_bert_dir, tmp_path):
    texts = [f"line {i}: " + "some words " * (i % 5) for i in range(70)]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(texts) + "\n")
    common = [str(source), "--model", str(tiny_bert_dir), "--precision", "fp32", "--shard-size", "40", "--quiet"]
    try:
        assert (
            main(["embed", *common, "--engine", "ray", "--ray-workers", "2", "--out", str(tmp_path / "r.parquet")]) == 0
        )
    finally:
        ray.shutdown()
    assert main(["embed", *common, "--out", str(tmp_path / "l.parquet")]) == 0
    remote, local = pq.read_table(tmp_path / "r.parquet"), pq.read_table(tmp_path / "l.parquet")
    assert remote["id"].to_pylist() == local["id"].to_pylist() == list(range(1, 71))
    np.testing.assert_allclose(
        np.array(remote["embedding"].to_pylist()), np.array(local["embedding"].to_pylist()), atol=1e-5
    )
