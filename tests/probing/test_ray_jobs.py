"""`sweep --engine ray` on a two-node Ray cluster (tests/conftest.py: ray_cluster), the driver joining by address:
the probe stages' jobs run as Ray tasks and score as the local run does, and the issue's acceptance sweep gives the
local pick and scores."""

from __future__ import annotations

import json

import pytest

from bertlens.cli.main import main
from tests.conftest import DATA

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.extended  # a Ray cluster of two nodes: about 20 s to start; an optional engine


def _rows(folder) -> list[dict]:
    return json.loads((folder / "results.json").read_text())["rows"]


def _recipe(folder) -> dict:
    return json.loads((folder / "recipe.json").read_text())


def test_the_screen_and_the_logistic_folds_run_as_ray_tasks_and_score_as_here(
    ray_cluster, tiny_bert_dir, tmp_path, monkeypatch
):
    """The bank is cached by the local run, so only the probes differ in where they run: every candidate's score is
    the local one, and both stages went through Ray."""
    from bertlens.probing import ray_jobs

    ran = []
    ordered = ray_jobs.RayJobs.ordered

    def spy(self, job, calls, total, on_each):
        ran.append(job.__name__)
        return ordered(self, job, calls, total, on_each)

    monkeypatch.setattr(ray_jobs, "RAY_PROBE_ROWS", 0)  # every stage is sent, however small
    monkeypatch.setattr(ray_jobs.RayJobs, "ordered", spy)
    common = ["sweep", "--task", "mr", "--data-dir", str(DATA), "--model", str(tiny_bert_dir), "--max-examples",
              "300", "--seed", "1", "--resamples", "50", "--cache-dir", str(tmp_path / "cache"), "--quiet"]  # fmt: skip
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    assert main([*common, "--engine", "ray", "--ray-address", ray_cluster, "--out", str(tmp_path / "ray")]) == 0
    assert {"screen_job", "logistic_job"} <= set(ran)
    here, there = _rows(tmp_path / "local"), _rows(tmp_path / "ray")
    assert [r["candidate"] for r in there] == [r["candidate"] for r in here]
    for mine, theirs in zip(there, here, strict=True):
        assert (mine["value"], mine.get("probe")) == (pytest.approx(theirs["value"], abs=1e-9), theirs.get("probe"))
    assert _recipe(tmp_path / "ray") == _recipe(tmp_path / "local")


def test_the_issue_acceptance_sweep_on_two_nodes_gives_the_local_pick_and_scores(ray_cluster, tmp_path):
    """`bertlens sweep --task stsb --max-examples 300 --seed 1 --engine ray --ray-workers 2` (the default model), here
    with the driver joining the two-node cluster by address: the same pick, every score within 1e-4."""
    common = ["sweep", "--task", "stsb", "--data-dir", str(DATA), "--max-examples", "300", "--seed", "1", "--quiet"]
    remote = ["--engine", "ray", "--ray-workers", "2", "--ray-address", ray_cluster]
    assert main([*common, *remote, "--cache-dir", str(tmp_path / "rc"), "--out", str(tmp_path / "ray")]) == 0
    assert main([*common, "--cache-dir", str(tmp_path / "lc"), "--out", str(tmp_path / "local")]) == 0
    here, there = _rows(tmp_path / "local"), _rows(tmp_path / "ray")
    assert [r["candidate"] for r in there] == [r["candidate"] for r in here]
    for mine, theirs in zip(there, here, strict=True):
        if theirs["value"] is not None:
            assert mine["value"] == pytest.approx(theirs["value"], abs=1e-4), mine["candidate"]
    assert _recipe(tmp_path / "ray") == _recipe(tmp_path / "local")
