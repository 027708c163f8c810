"""Catalog tasks for every install: where a task's files are found, and their download from a public source.

A catalog task (`--task stsb`) is read, in order, from `--data-dir`, `$BERTLENS_DATA`, `../shared/data` beside the
working directory (a checkout), the user cache (`$BERTLENS_CACHE/data`, default `~/.cache/bertlens/data`), and
otherwise downloaded: the files of a pinned Hugging Face dataset revision, converted once into the catalog's own
layout in the cache, with a manifest of their SHA-256 that is verified each time the cache is read (a damaged copy
is fetched again, never read). The same loaders and checks then read them. `$BERTLENS_CATALOG_SOURCE` names a
directory standing in for the Hub (`REPO/REVISION/FILE`), for a mirror without network and for the tests.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bertlens.errors import BertlensError, OptionError, literal
from bertlens.io.tables import TableSpec, iter_records
from bertlens.tasks.catalog import CATALOG, TaskSpec, get_task

if TYPE_CHECKING:
    from bertlens.tasks.loaders import TaskData

MANIFEST = "manifest.json"  # in each task's cache folder: source, revision and each converted file's SHA-256


@dataclass(frozen=True)
class PublicSource:
    """Where a catalog task is published: a Hugging Face dataset at a pinned revision, the file of each of the
    catalog's splits, and how its rows are read (`reader`: a key of READERS)."""

    repo: str
    revision: str  # a full commit: the same files on every machine
    files: tuple[tuple[str, str], ...]  # (split, file in the repo), the catalog's splits in its order
    reader: str
    note: str = ""  # how it differs from the copy in ../shared/data, if it does


SOURCES: dict[str, PublicSource] = {
    "sst2": PublicSource(
        "SetFit/sst2",
        "00ea8ccb7a54b4e3780a3e51aa3f80361ff849c0",
        (("train", "train.jsonl"), ("dev", "dev.jsonl"), ("test", "test.jsonl")),
        "text_label_jsonl",
        "the same 6,920 / 872 / 1,821 sentences as SentEval's stsa.binary",
    ),
    "stsb": PublicSource(
        "PhilipMay/stsb_multi_mt",
        "e1b7f8617fa83b90b4e7530dac02f1583cc61415",
        (
            ("train", "en/train-00000-of-00001.parquet"),
            ("dev", "en/dev-00000-of-00001.parquet"),
            ("test", "en/test-00000-of-00001.parquet"),
        ),
        "sts_parquet",
        "the source of ../shared/data/stsb (its English configuration)",
    ),
}


def _text_label_jsonl(path: Path) -> Iterator[tuple[str, ...]]:
    """{"text": ..., "label": ...} lines -> (label, text)."""
    for _, (text, label) in iter_records(TableSpec(path, ("text", "label"))):
        yield label, " ".join(text.split())


def _sts_parquet(path: Path) -> Iterator[tuple[str, ...]]:
    """sentence1, sentence2, similarity_score (0-5) columns -> (sentence1, sentence2, score)."""
    for _, row in iter_records(TableSpec(path, ("sentence1", "sentence2", "similarity_score"), texts=2)):
        yield row


READERS: dict[str, Callable[[Path], Iterator[tuple[str, ...]]]] = {
    "text_label_jsonl": _text_label_jsonl,
    "sts_parquet": _sts_parquet,
}


def _write_rows(spec: TaskSpec, rows: list[tuple[str, ...]], target: Path) -> None:
    """Rows in the catalog's own format for `spec` (loaders.READERS reads them back)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if spec.file_format == "label_prefixed":
        target.write_text("".join(f"{label} {text}\n" for label, text in rows), encoding=spec.encoding)
    elif spec.file_format == "sts_csv":
        with open(target, "w", newline="", encoding=spec.encoding) as handle:
            csv.writer(handle).writerows(rows)
    else:  # no source of another layout is pinned; a new one adds its writer here
        raise BertlensError(f"task '{spec.name}': no writer for the '{spec.file_format}' layout")


def user_data_dir() -> Path:
    """Where downloaded catalog tasks are kept: $BERTLENS_CACHE/data, default ~/.cache/bertlens/data."""
    return Path(os.environ.get("BERTLENS_CACHE", Path.home() / ".cache" / "bertlens")) / "data"


def _hub_file(source: PublicSource, file: str) -> Path:
    """One file of the pinned revision: from $BERTLENS_CATALOG_SOURCE when set (REPO/REVISION/FILE), else the Hub."""
    stand_in = os.environ.get("BERTLENS_CATALOG_SOURCE")
    if stand_in:
        path = Path(stand_in) / source.repo / source.revision / file
        if not path.is_file():
            raise BertlensError(f"$BERTLENS_CATALOG_SOURCE has no {literal(path)}")
        return path
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(source.repo, file, repo_type="dataset", revision=source.revision))
    except Exception as exc:  # noqa: BLE001 - offline, unreachable or removed: one line, what to do
        reason = " ".join(str(exc).split())[:160]
        raise BertlensError(
            f"could not download {source.repo}@{source.revision[:7]} ({file}): {reason}; when online run `bertlens "
            "data fetch TASK`, or put a copy of the task's files under --data-dir"
        ) from None


def _sha256(path: Path) -> str:
    from bertlens.io.cache import file_sha256  # numpy-free callers (the command line's checks) stay light

    return file_sha256(path)


def fetch(name: str, root: Path | None = None) -> Path:
    """Download task `name` from its source, convert it into the catalog's layout under `root` (default the user
    cache) with a manifest of SHA-256s, and return `root`. Written beside and moved in whole: an interrupted fetch
    leaves nothing a later run would read."""
    spec, source = get_task(name), SOURCES.get(name)
    if source is None:
        raise OptionError(f"task '{literal(name)}' has no public source pinned yet; {literal(where_to_copy(spec))}")
    root = Path(root or user_data_dir())
    staging = root / f".{name}.fetching{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        files = {}
        for (split, file), (_, relative) in zip(source.files, spec.splits, strict=True):
            rows = list(READERS[source.reader](_hub_file(source, file)))
            if not rows:
                raise BertlensError(f"{source.repo}@{source.revision[:7]} {file}: no rows ({split})")
            _write_rows(spec, rows, staging / relative)
            files[relative] = _sha256(staging / relative)
        manifest = {"task": name, "repo": source.repo, "revision": source.revision, "files": files}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        final = root / name
        shutil.rmtree(final, ignore_errors=True)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root / name


def cached(name: str, root: Path | None = None) -> Path | None:
    """The cached copy's data root (its files at the catalog's paths), or None when absent or when a file does not
    match the manifest (then it is fetched again, never read)."""
    folder = Path(root or user_data_dir()) / name
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return None
    try:
        files = json.loads(manifest.read_text())["files"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return None
    for relative, digest in files.items():
        path = folder / relative
        if not path.is_file() or _sha256(path) != digest:
            return None
    return folder


def _holds(root: Path, spec: TaskSpec) -> bool:
    return all((root / relative).exists() for _, relative in spec.splits)


def where_to_copy(spec: TaskSpec) -> str:
    files = ", ".join(relative for _, relative in spec.splits)
    return f"put its files ({files}) under a folder given as --data-dir or $BERTLENS_DATA"


def catalog_root(name: str, explicit: str | os.PathLike | None = None) -> Path:
    """The data root to read catalog task `name` from, in the order of this module's docstring; downloads it when
    no copy is found and a source is pinned (unless HF_HUB_OFFLINE is set: then one line says what to run)."""
    spec = get_task(name)
    given = explicit or os.environ.get("BERTLENS_DATA")
    if given:
        from bertlens.tasks.catalog import data_dir

        return data_dir(given)
    beside = Path.cwd().parent / "shared" / "data"
    if beside.is_dir() and _holds(beside, spec):
        return beside
    copy = cached(name)
    if copy is not None:
        return copy
    if name not in SOURCES:
        raise BertlensError(f"task '{name}' is not on this machine and has no public source pinned yet; "
                            f"{where_to_copy(spec)}")  # fmt: skip
    if os.environ.get("HF_HUB_OFFLINE") not in (None, "", "0") and not os.environ.get("BERTLENS_CATALOG_SOURCE"):
        raise BertlensError(
            f"task '{name}' is not on this machine and the Hub is offline (HF_HUB_OFFLINE): when online run "
            f"`bertlens data fetch {name}`, or {where_to_copy(spec)}"
        )
    return fetch(name)


def load_catalog(name: str, data_dir: str | os.PathLike | None = None, **keywords) -> TaskData:
    """Catalog task `name` read from where catalog_root() finds (or puts) it; `keywords` as load_catalog_task's."""
    from bertlens.tasks.loaders import load_catalog_task

    return load_catalog_task(get_task(name), catalog_root(name, data_dir), **keywords)


@dataclass(frozen=True)
class CatalogEntry:
    """One row of `bertlens data list`."""

    task: str
    description: str
    source: str  # 'REPO@REVISION' or why there is none
    found: str  # where it would be read from now, or '' when it would be downloaded


def catalog_entries(explicit: str | None = None) -> list[CatalogEntry]:
    """Every catalog task, its public source and where a run would read it from now (nothing is downloaded)."""
    entries = []
    given = explicit or os.environ.get("BERTLENS_DATA")
    beside = Path.cwd().parent / "shared" / "data"
    for name, spec in CATALOG.items():
        source = SOURCES.get(name)
        where = ""
        if given and _holds(Path(given), spec):
            where = str(given)
        elif beside.is_dir() and _holds(beside, spec):
            where = str(beside)
        elif cached(name) is not None:
            where = str(user_data_dir() / name) + " (cached, verified)"
        described = f"{source.repo}@{source.revision[:7]}" if source else "none pinned yet (copy its files)"
        entries.append(CatalogEntry(name, spec.description, described, where))
    return entries
