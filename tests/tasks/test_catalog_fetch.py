"""Catalog tasks for a pip user (tasks/catalog_fetch.py): found in the user cache, or downloaded from the pinned
source, converted once, checksummed and read by the same loaders. No network: a local directory stands in for the
Hub ($BERTLENS_CATALOG_SOURCE, REPO/REVISION/FILE), built from the shared copies of the same data."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertlens.cli.main import main
from bertlens.errors import BertlensError
from bertlens.tasks import catalog_fetch
from bertlens.tasks.catalog import get_task
from bertlens.tasks.catalog_fetch import SOURCES, cached, catalog_root, fetch
from bertlens.tasks.loaders import load_catalog_task
from tests.conftest import DATA


def stand_in_hub(root):
    """The pinned files of SST-2 and STS-B as their sources publish them (JSON lines; Parquet), from ../shared."""
    sst2 = SOURCES["sst2"]
    for (_, file), split in zip(sst2.files, ("train", "dev", "test"), strict=True):
        lines = (DATA / "sst2" / f"{split}.txt").read_text().splitlines()
        rows = [
            {"text": text, "label": int(label), "label_text": "x"}
            for label, _, text in (s.partition(" ") for s in lines)
        ]
        path = root / sst2.repo / sst2.revision / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    stsb = SOURCES["stsb"]
    for (_, file), split in zip(stsb.files, ("train", "dev", "test"), strict=True):
        import csv

        rows = list(csv.reader((DATA / "stsb" / f"{split}.csv").open(newline="")))
        table = pa.table({"sentence1": [r[0] for r in rows], "sentence2": [r[1] for r in rows],
                          "similarity_score": pa.array([float(r[2]) for r in rows], pa.float32())})  # fmt: skip
        path = root / stsb.repo / stsb.revision / file
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
    return root


@pytest.fixture
def pip_user(tmp_path, monkeypatch):
    """A working directory outside any checkout, no $BERTLENS_DATA, an empty cache, the stand-in Hub."""
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    monkeypatch.chdir(home / "work")
    monkeypatch.delenv("BERTLENS_DATA", raising=False)
    monkeypatch.setenv("BERTLENS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BERTLENS_CATALOG_SOURCE", str(stand_in_hub(tmp_path / "hub")))
    return tmp_path


@pytest.mark.parametrize("name", ["sst2", "stsb"])
def test_a_downloaded_task_reads_as_the_shared_copy(pip_user, name):
    root = catalog_root(name)
    assert cached(name) == root and (root / "manifest.json").is_file()
    fetched, shared = load_catalog_task(get_task(name), root), load_catalog_task(get_task(name), DATA)
    for split in shared.splits:
        a, b = fetched.splits[split], shared.splits[split]
        same = (lambda t: " ".join(t.split())) if name == "sst2" else (lambda t: t)  # SST-2's spaces are normalised
        assert a.texts_a == tuple(map(same, b.texts_a)) and a.texts_b == b.texts_b
        assert np.allclose(a.targets, b.targets, atol=1e-6)


def test_a_second_run_reads_the_cache_and_a_damaged_one_is_fetched_again(pip_user, monkeypatch):
    first = catalog_root("stsb")
    monkeypatch.setattr(catalog_fetch, "_hub_file", lambda *a: pytest.fail("downloaded again"))
    assert catalog_root("stsb") == first
    (first / "stsb" / "dev.csv").write_text("damaged,row,1\n")
    assert cached("stsb") is None  # a file that does not match its manifest is never read
    monkeypatch.undo()
    monkeypatch.chdir(pip_user / "home" / "work")
    monkeypatch.delenv("BERTLENS_DATA", raising=False)
    monkeypatch.setenv("BERTLENS_CACHE", str(pip_user / "cache"))
    monkeypatch.setenv("BERTLENS_CATALOG_SOURCE", str(pip_user / "hub"))
    assert catalog_root("stsb") == first and cached("stsb") == first


def test_offline_and_not_cached_is_one_line_naming_the_fetch_command(pip_user, monkeypatch):
    monkeypatch.delenv("BERTLENS_CATALOG_SOURCE")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BertlensError, match="when online run `bertlens data fetch stsb`, or put its files"):
        catalog_root("stsb")
    with pytest.raises(BertlensError, match=r"no public source pinned yet; put its files \(mr/rt-polarity.all\)"):
        catalog_root("mr")


def test_an_interrupted_fetch_leaves_nothing_to_read(pip_user, monkeypatch):
    real = catalog_fetch._hub_file
    calls = []

    def failing(source, file):
        calls.append(file)
        if len(calls) == 2:
            raise BertlensError("connection reset")
        return real(source, file)

    monkeypatch.setattr(catalog_fetch, "_hub_file", failing)
    with pytest.raises(BertlensError, match="connection reset"):
        fetch("sst2")
    assert cached("sst2") is None and not list((pip_user / "cache" / "data").glob(".*"))


def test_the_readme_sweep_runs_for_a_pip_user_and_data_list_says_where(pip_user, tiny_bert_dir, capsys):
    argv = ["sweep", "--task", "stsb", "--max-examples", "200", "--model", str(tiny_bert_dir), "--layers", "-1",
            "--poolers", "mean", "--resamples", "50", "--quiet", "--out", str(pip_user / "out")]  # fmt: skip
    assert main(argv) == 0
    assert json.loads((pip_user / "out" / "results.json").read_text())["rows"]
    assert main(["data", "list"]) == 0
    listed = capsys.readouterr().out
    assert "stsb" in listed and "(cached, verified)" in listed and "PhilipMay/stsb_multi_mt@e1b7f86" in listed
