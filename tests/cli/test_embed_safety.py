"""embed is safe to run twice, to resume from damaged shards, and works as the README writes it."""

from __future__ import annotations

import fcntl

import numpy as np
import pytest

from bertlens.cli.main import main
from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe

TEXTS = [f"sentence number {i} about the weather" for i in range(30)]


@pytest.fixture
def texts_file(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(TEXTS) + "\n")
    return path


def test_a_second_run_on_the_same_out_stops_at_once(tmp_path, texts_file, tiny_bert_dir, capsys):
    out = tmp_path / "v.npy"
    partial = tmp_path / "v.npy.partial"
    partial.mkdir()
    with open(partial / ".lock", "w") as held:  # another process holds the run
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        code = main(["embed", str(texts_file), "--model", str(tiny_bert_dir), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and "another bertlens embed is writing" in err and len(err.splitlines()) == 1
    assert not out.exists()
    assert (
        main(["embed", str(texts_file), "--model", str(tiny_bert_dir), "--out", str(out), "--quiet"]) == 0
    )  # free now


def test_a_tampered_shard_is_embedded_again_not_trusted(tmp_path, texts_file, tiny_bert_dir):
    out = tmp_path / "v.npy"
    args = ["embed", str(texts_file), "--model", str(tiny_bert_dir), "--out", str(out), "--shard-size", "10", "--quiet"]
    args += ["--precision", "fp32"]

    def stop_after_two_shards(*_):
        if len(list((tmp_path / "v.npy.partial").glob("*.sha256"))) >= 2:
            raise KeyboardInterrupt

    from bertlens.embedding import job

    real = job.write_text
    job.write_text = lambda *a: (real(*a), stop_after_two_shards())
    try:
        assert main(args) == 130  # interrupted after two finished shards
    finally:
        job.write_text = real
    shard = tmp_path / "v.npy.partial" / "shard-000000.npz"
    stored = dict(np.load(shard))
    np.savez(shard, **{**stored, "vectors": stored["vectors"] + 1.0})  # altered after it was written
    with pytest.warns(UserWarning, match="shard-000000.npz of the unfinished run failed its checksum"):
        assert main(args) == 0
    expected = Embedder(Recipe(model=str(tiny_bert_dir))).encode(TEXTS)
    np.testing.assert_allclose(np.load(out), expected, atol=1e-5)


def test_the_documented_layers_form_works(tmp_path, texts_file, tiny_bert_dir):
    out = tmp_path / "v.npy"
    assert (
        main(
            [
                "embed",
                str(texts_file),
                "--model",
                str(tiny_bert_dir),
                "--layers",
                "-2:",
                "--mixer",
                "mean",
                "--precision",
                "fp32",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    expected = Embedder(Recipe(model=str(tiny_bert_dir), layers=(1, 2), mixer="mean")).encode(TEXTS)
    np.testing.assert_allclose(np.load(out), expected, atol=1e-5)


def test_progress_off_a_terminal_is_plain_lines(tmp_path, texts_file, tiny_bert_dir, capsys):
    assert main(["embed", str(texts_file), "--model", str(tiny_bert_dir), "--out", str(tmp_path / "v.npy")]) == 0
    err = capsys.readouterr().err
    assert "embed: embedding 30/30 texts" in err and "\x1b[" not in err  # no bar redraws in a log
