"""Catalog tasks for every install: where a task's files are found, and their download from a public source.

A catalog task (`--task stsb`) is read, in order, from `--data-dir`, `$BERTLENS_DATA`, `../shared/data` beside the
working directory (a checkout), the user cache (`$BERTLENS_CACHE/data`, default `~/.cache/bertlens/data`), and
otherwise downloaded from the task's pinned public source (tasks/catalog_sources.py: a Hugging Face dataset or a
GitHub repository at a full commit, or an ir_datasets collection), converted once into the catalog's own layout in
the cache, with a manifest of their SHA-256 that is verified each time the cache is read (a damaged copy is fetched
again, never read). The same loaders and checks then read them. `$BERTLENS_CATALOG_SOURCE` names a directory
standing in for the sources (`REPO/REVISION/FILE`, `ir_datasets/COLLECTION/FILE`), for a mirror without network
and for the tests. HF_HUB_OFFLINE=1 turns every download off.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bertlens.errors import BertlensError, OptionError, literal
from bertlens.tasks.catalog import CATALOG, TaskSpec, get_task
from bertlens.tasks.catalog_sources import CONVERTERS, SOURCES, PublicSource, dump_ir_dataset

if TYPE_CHECKING:
    from bertlens.tasks.loaders import TaskData

MANIFEST = "manifest.json"  # in each task's cache folder: source, revision and each converted file's SHA-256


def user_data_dir() -> Path:
    """Where downloaded catalog tasks are kept: $BERTLENS_CACHE/data, default ~/.cache/bertlens/data."""
    return Path(os.environ.get("BERTLENS_CACHE", Path.home() / ".cache" / "bertlens")) / "data"


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE") not in (None, "", "0")


def _download(url: str, target: Path) -> Path:
    import urllib.request

    with urllib.request.urlopen(url, timeout=60) as response, open(target, "wb") as out:
        shutil.copyfileobj(response, out)
    return target


def _source_files(source: PublicSource, folder: Path) -> list[Path]:
    """The source's files, in order: from $BERTLENS_CATALOG_SOURCE when set (REPO/REVISION/FILE, or
    ir_datasets/COLLECTION/FILE), else downloaded into `folder` (the Hub, GitHub's raw files, ir_datasets)."""
    stand_in = os.environ.get("BERTLENS_CATALOG_SOURCE")
    if stand_in:
        base = Path(stand_in) / ("ir_datasets" if source.host == "ir_datasets" else "") / source.repo / source.revision
        paths = [base / file for file in source.files]
        for path in paths:
            if not path.is_file():
                raise BertlensError(f"$BERTLENS_CATALOG_SOURCE has no {literal(path)}")
        return paths
    try:
        if source.host == "ir_datasets":
            return dump_ir_dataset(source.repo, folder)
        if source.host == "github":
            base = f"https://raw.githubusercontent.com/{source.repo}/{source.revision}"
            return [_download(f"{base}/{file}", folder / Path(file).name) for file in source.files]
        from huggingface_hub import hf_hub_download

        return [Path(hf_hub_download(source.repo, file, repo_type="dataset", revision=source.revision))
                for file in source.files]  # fmt: skip
    except BertlensError:
        raise
    except Exception as exc:  # noqa: BLE001 - offline, unreachable or removed: one line, what to do
        reason = " ".join(str(exc).split())[:160]
        raise BertlensError(
            f"could not download {source.described}: {reason}; when online run `bertlens data fetch TASK`, or put "
            "a copy of the task's files under --data-dir"
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
    if _offline() and not os.environ.get("BERTLENS_CATALOG_SOURCE"):
        raise BertlensError(
            f"task '{name}' is not on this machine and downloads are off (HF_HUB_OFFLINE): when online run "
            f"`bertlens data fetch {name}`, or {where_to_copy(spec)}"
        )
    root = Path(root or user_data_dir())
    staging = root / f".{name}.fetching{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        (staging / ".downloads").mkdir(parents=True)
        CONVERTERS[source.convert](spec, _source_files(source, staging / ".downloads"), staging)
        shutil.rmtree(staging / ".downloads")
        files = {p.relative_to(staging).as_posix(): _sha256(p) for p in sorted(staging.rglob("*")) if p.is_file()}
        for relative, digest in source.expected:
            if files.get(relative) != digest:
                raise BertlensError(
                    f"{source.described} converted into {relative} does not match the pinned SHA-256 "
                    f"({(files.get(relative) or 'missing')[:12]} against {digest[:12]}): the source has changed; "
                    f"nothing was kept. {where_to_copy(spec)}"
                )
        manifest = {"task": name, "source": source.described, "files": files}
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
    return fetch(name)  # refuses, naming the files to copy, when no source is pinned


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
        described = source.described if source else "none pinned yet (copy its files)"
        entries.append(CatalogEntry(name, spec.description, described, where))
    return entries
