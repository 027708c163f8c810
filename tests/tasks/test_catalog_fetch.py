"""Catalog tasks for a pip user (tasks/catalog_fetch.py): found in the user cache, or downloaded from the pinned
source, converted once, checksummed and read by the same loaders. No network: a local directory stands in for the
Hub ($BERTLENS_CATALOG_SOURCE, REPO/REVISION/FILE), built from the shared copies of the same data."""

import csv
import io
import json
import shutil
import tarfile
import textwrap
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertlens.cli.main import main
from bertlens.errors import BertlensError
from bertlens.tasks import catalog_fetch
from bertlens.tasks.catalog import get_task
from bertlens.tasks.catalog_fetch import cached, catalog_root, fetch
from bertlens.tasks.catalog_sources import SOURCES
from bertlens.tasks.loaders import load_catalog_task
from tests.conftest import DATA


def _place(root, source, file):
    base = root / "ir_datasets" / source.repo if source.host == "ir_datasets" else root / source.repo / source.revision
    path = base / file
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _smart(records):
    """Records in the SMART layout of the Glasgow files, texts wrapped at 60 characters as there."""
    out = []
    for record in records:
        out.append(f".I {record['I']}\n")
        for field in ("T", "A", "W", "B"):
            if record.get(field) is not None:
                out.append(
                    f".{field}\n"
                    + "\n".join(textwrap.wrap(record[field], 60, break_on_hyphens=False, break_long_words=False))
                    + "\n"
                )
    return "".join(out)


def _stand_in_cisi(root):
    folder = DATA / "retrieval" / "cisi"
    docs = [{"I": d["_id"], "T": d["title"], "A": "X, Y.", "W": d["text"]} for d in _jsonl(folder / "corpus.jsonl")]
    queries = [
        {"I": q["_id"], "T": q["metadata"].get("title"), "W": q["text"]} for q in _jsonl(folder / "queries.jsonl")
    ]
    rows = [line.split("\t") for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    files = {"CISI.ALL": _smart(docs), "CISI.QRY": _smart(queries),
             "CISI.REL": "".join(f"{q:>6}{d:>6} 0 0.000000\n" for q, d, _ in rows)}  # fmt: skip
    with tarfile.open(_place(root, SOURCES["cisi"], "cisi.tar.gz"), "w:gz") as archive:
        for name, text in files.items():
            data = text.encode("latin-1")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def _stand_in_ir_datasets(root, name, folder):
    """ir_datasets' records as it yields them: Cranfield's queries under cran.qry's .I numbers (zeros stripped) and
    cranqrel's codes; raw texts with line breaks."""
    docs = [{"doc_id": d["_id"], "title": d["title"], "text": d["text"].replace(" ", "\n", 3)}
            for d in _jsonl(folder / "corpus.jsonl")]  # fmt: skip
    queries = [{"query_id": q.get("metadata", {}).get("cran_qry_I", q["_id"]).lstrip("0"), "text": q["text"]}
               for q in _jsonl(folder / "queries.jsonl")]  # fmt: skip
    rows = [line.split("\t") for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    code = (lambda s: -1 if s == 5 else 5 - s) if name == "cranfield" else (lambda s: s)
    qrels = [{"query_id": q, "doc_id": d, "relevance": code(int(s))} for q, d, s in rows]
    for file, records in zip(("docs.jsonl", "queries.jsonl", "qrels.jsonl"), (docs, queries, qrels), strict=True):
        _place(root, SOURCES[name], file).write_text("".join(json.dumps(r) + "\n" for r in records))


def stand_in_hub(root):
    """Every catalog task's pinned source files as their sources publish them, made from ../shared's copies:
    SST-2 as JSON lines, STS-B as Parquet, SentEval's MR/SUBJ/TREC files, NLTK's movie_reviews zip, the CISI
    tarball, and ir_datasets' records of Cranfield and NPL."""
    sst2 = SOURCES["sst2"]
    for file, split in zip(sst2.files, ("train", "dev", "test"), strict=True):
        lines = (DATA / "sst2" / f"{split}.txt").read_text().splitlines()
        rows = [
            {"text": text, "label": int(label), "label_text": "x"}
            for label, _, text in (s.partition(" ") for s in lines)
        ]
        _place(root, sst2, file).write_text("".join(json.dumps(r) + "\n" for r in rows))
    stsb = SOURCES["stsb"]
    for file, split in zip(stsb.files, ("train", "dev", "test"), strict=True):
        rows = list(csv.reader((DATA / "stsb" / f"{split}.csv").open(newline="")))
        table = pa.table({"sentence1": [r[0] for r in rows], "sentence2": [r[1] for r in rows],
                          "similarity_score": pa.array([float(r[2]) for r in rows], pa.float32())})  # fmt: skip
        pq.write_table(table, _place(root, stsb, file))
    for name in ("mr", "subj", "trec"):
        for file, (_, relative) in zip(SOURCES[name].files, get_task(name).splits, strict=True):
            shutil.copyfile(DATA / relative, _place(root, SOURCES[name], file))
    with zipfile.ZipFile(_place(root, SOURCES["movie_reviews"], SOURCES["movie_reviews"].files[0]), "w") as archive:
        for review in _jsonl(DATA / "movie_reviews" / "reviews.jsonl")[::-1]:  # the order is the converter's
            polarity = ("neg", "pos")[review["label"]]
            archive.writestr(f"movie_reviews/{polarity}/{review['id']}.txt", review["text"])
        archive.writestr("movie_reviews/README", "not a review")
    _stand_in_cisi(root)
    _stand_in_ir_datasets(root, "cranfield", DATA / "retrieval" / "cranfield")
    _stand_in_ir_datasets(root, "npl", DATA / "retrieval" / "vaswani-npl")
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


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_a_downloaded_task_reads_as_the_shared_copy(pip_user, name):
    root = catalog_root(name)
    assert cached(name) == root and (root / "manifest.json").is_file()
    fetched, shared = load_catalog_task(get_task(name), root), load_catalog_task(get_task(name), DATA)
    for relative, digest in SOURCES[name].expected:  # pinned: byte for byte the reference copy
        assert json.loads((root / "manifest.json").read_text())["files"][relative] == digest
    if shared.collection is not None:  # the SMART files and ir_datasets' records, line breaks and all, read the same
        a, b = fetched.collection, shared.collection
        assert a.doc_ids == b.doc_ids and a.query_ids == b.query_ids and a.qrels == b.qrels
        assert a.documents == b.documents and a.queries == b.queries
        return
    assert fetched.splits.keys() == shared.splits.keys()
    for split in shared.splits:
        a, b = fetched.splits[split], shared.splits[split]
        same = (lambda t: " ".join(t.split())) if name == "sst2" else (lambda t: t)  # SST-2's spaces are normalised
        assert a.texts_a == tuple(map(same, b.texts_a)) and a.texts_b == b.texts_b
        assert np.allclose(a.targets, b.targets, atol=1e-6)


def test_a_source_that_has_drifted_is_refused_and_nothing_kept(pip_user):
    source = SOURCES["trec"]
    path = pip_user / "hub" / source.repo / source.revision / source.files[1]
    path.write_text(path.read_text().replace("Aspen", "Vail"))
    with pytest.raises(BertlensError, match=r"trec/test.txt does not match the pinned SHA-256 .* nothing was kept"):
        fetch("trec")
    assert cached("trec") is None and not list((pip_user / "cache" / "data").glob("*"))


def test_a_second_run_reads_the_cache_and_a_damaged_one_is_fetched_again(pip_user, monkeypatch):
    first = catalog_root("stsb")
    monkeypatch.setattr(catalog_fetch, "_source_files", lambda *a: pytest.fail("downloaded again"))
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
    with pytest.raises(BertlensError, match=r"run `bertlens data fetch mr`, or put its files \(mr/rt-polarity.all\)"):
        catalog_root("mr")


def test_an_interrupted_fetch_leaves_nothing_to_read(pip_user, monkeypatch):
    real = catalog_fetch.CONVERTERS["text_label_jsonl"]

    def failing(spec, inputs, staging):
        real(spec, inputs[:1] * 3, staging)  # the first split written, then the connection drops
        raise BertlensError("connection reset")

    monkeypatch.setitem(catalog_fetch.CONVERTERS, "text_label_jsonl", failing)
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


def test_the_test_collections_without_ir_datasets_name_the_extra(tmp_path, monkeypatch):
    from bertlens.extras import MissingExtraError
    from bertlens.tasks.catalog_sources import dump_ir_dataset

    monkeypatch.setitem(__import__("sys").modules, "ir_datasets", None)  # as if not installed
    with pytest.raises(MissingExtraError, match=r"'cranfield' \(bertlens data fetch\) needs the 'catalog' extra"):
        dump_ir_dataset("cranfield", tmp_path)
