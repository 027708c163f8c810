"""MTEB runs offline on STS-B from local files with a recipe encoder, and its score equals bertlens's cosine
Spearman for the same recipe (the sweep's cosine protocol on a float32 bank)."""

from __future__ import annotations

import pytest

from bertlens.adapters.mteb import evaluate_sts, read_sts_csv
from bertlens.errors import BertlensError
from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import load_catalog_task
from tests.conftest import DATA

pytest.importorskip("mteb")


def test_mteb_score_equals_the_sweeps_cosine_spearman(tiny_bert_dir, tmp_path):
    task = load_catalog_task(get_task("stsb"), DATA)
    config = SweepConfig(resamples=50, layers=(2,), poolers=("mean",), protocols=("cosine",), bank_dtype="float32")
    result = run_sweep(task, str(tiny_bert_dir), config=config, cache_dir=tmp_path)
    cosine = result.protocols["cosine"]
    sweep = {c.name: float(v) for c, v in zip(cosine.candidates, cosine.test.value, strict=True)}["mean/L2"]
    mteb_score = evaluate_sts(Recipe(model=str(tiny_bert_dir), layers=(2,), pooler="mean"), DATA / "stsb" / "test.csv")
    assert mteb_score == pytest.approx(sweep, abs=1e-4)


def test_a_bad_sts_file_names_its_line(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("a,b,4.0\nc,d,high\n")
    with pytest.raises(BertlensError, match="s.csv:2"):
        read_sts_csv(path)
