"""At the size users run: every command on a real 12-layer, 768-wide model (all-mpnet-base-v2), as `make base-model`
fetches it (tests/conftest.py: base_model_dir skips with the command to run when it is absent).

What the tiny random models of every family cannot show: real weights at base size through every command, the
embeddings equal to sentence-transformers' own, MTEB's published STS-B figure, and the int8 gate passing.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from bertlens.cli.main import main
from tests.conftest import DATA
from tests.integration.commands import run_and_check
from tests.integration.test_family_matrix import COMMANDS

pytestmark = pytest.mark.extended


def _sts_sentences(count: int) -> list[str]:
    with open(DATA / "stsb" / "train.csv", newline="", encoding="utf-8") as handle:
        return list(dict.fromkeys(text for row in csv.reader(handle) for text in row[:2]))[:count]


def test_embed_fp32_equals_sentence_transformers_per_vector(base_model_dir, tmp_path):
    from sentence_transformers import SentenceTransformer

    texts = _sts_sentences(200) + ["word " * 500]  # a text past the model's 384-token limit is truncated alike
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n")
    out = tmp_path / "v.npy"
    args = ["embed", str(tmp_path / "texts.txt"), "--model", str(base_model_dir), "--precision", "fp32"]
    assert main([*args, "--normalize", "--out", str(out), "--quiet"]) == 0
    expected = SentenceTransformer(str(base_model_dir), device="cpu").encode(texts, batch_size=32)  # normalised
    got = np.load(out)
    assert got.shape == (len(texts), 768)
    assert np.abs(got - expected).max(axis=1).max() <= 1e-5


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_runs_at_base_size(command, base_model_dir, mini_data_dir, tmp_path, capsys):
    run_and_check(command, str(base_model_dir), tmp_path, mini_data_dir, capsys)
    if command == "export onnx":
        assert json.loads((tmp_path / "export-onnx" / "export.json").read_text())["dim"] == 768


def test_the_int8_gate_passes_at_base_size_on_held_out_texts(base_model_dir, tmp_path):
    from bertlens.embedding.gate import Gate
    from bertlens.experiments.export import Int8Options, run_export_onnx
    from bertlens.representation.recipe import Recipe

    texts = _sts_sentences(512)  # the CLI's default: 512 parity texts, which also calibrate
    outcome = run_export_onnx(Recipe(model=str(base_model_dir)), tmp_path / "int8", texts, "STS-B", int8=Int8Options())
    gate = Gate()
    assert outcome.passed and outcome.int8.texts == 256
    assert outcome.int8.mean_cosine >= gate.mean_cosine and outcome.int8.min_cosine >= gate.min_cosine
    assert outcome.quantized_modules >= 48  # of 72: most of the products run in int8
    record = json.loads((tmp_path / "int8" / "export.json").read_text())["int8"]
    last = record["search"][-1]
    assert last["where"] == "onnx" and last["passed"]  # the real graph confirmed the choice


def test_sweep_reproduces_mteb_published_sts_b_figure(base_model_dir, tmp_path):
    """MTEB's STSBenchmark (test, cosine Spearman) for all-mpnet-base-v2: 0.8342 (its published leaderboard row)."""
    out = tmp_path / "stsb"
    args = ["sweep", "--task", "stsb", "--model", str(base_model_dir), "--layers=-1", "--poolers", "mean,cls"]
    assert main([*args, "--protocols", "cosine", "--resamples", "200", "--out", str(out), "--quiet"]) == 0
    rows = json.loads((out / "results.json").read_text())["rows"]
    (row,) = [r for r in rows if r["candidate"] == "mean/L12" and r["protocol"] == "cosine" and r["split"] == "test"]
    assert row["value"] == pytest.approx(0.8342, abs=0.002)
