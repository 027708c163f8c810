"""Content-addressed caches: one way to name an entry, build it, publish it and trust it.

- `content_key` hashes settings (JSON) plus any texts or arrays into a short hex key.
- A cache *directory* (feature banks, word banks) is built in a private staging directory and
  renamed into place with `meta.json` written last; `meta.json` records the sha256 of every file,
  and `open_entry` verifies them before the entry is used. A missing, truncated, altered or
  unreadable entry is never used: it is removed, a one-line warning says so, and the caller
  rebuilds it.
- A long build (a feature bank of 100k texts) stages in `.<key>.partial` instead, under a lock, so a stopped run
  resumes there (`resumable_staging`); what it holds is trusted only as far as its own checkpoints say.
- A cached JSON *result* (a finished fine-tuning run, a probed task) is stored with its key and a
  checksum of its payload; `cached_result` recomputes when either does not match.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np

from bertlens.io.atomic import write_json

T = TypeVar("T")


def default_cache_dir(explicit: Path | None = None) -> Path:
    """`explicit`, else $BERTLENS_CACHE, else ~/.cache/bertlens (feature banks live there)."""
    return Path(explicit) if explicit else Path(os.environ.get("BERTLENS_CACHE", Path.home() / ".cache" / "bertlens"))


def content_key(settings, texts: Iterable[str] = (), arrays: Iterable[np.ndarray] = (), length: int = 16) -> str:
    """sha256 over JSON settings, then each text (NUL-separated) and each array's bytes."""
    digest = hashlib.sha256(json.dumps(settings, default=str).encode())
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    for array in arrays:
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:length]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def payload_sha256(data) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def staging_dir(final: Path) -> Path:
    """A fresh private directory next to `final` to build a cache entry in; the half-built entries that stopped
    processes left beside it (an interrupted sweep's bank: tens of MB each) are removed first."""
    remove_stale_staging(final.parent)
    tmp = final.with_name(f".{final.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


@contextlib.contextmanager
def private_staging(final: Path) -> Iterator[tuple[Path, bool]]:
    """staging_dir(final) in resumable_staging's form: (directory, False), for builds that must not resume."""
    yield staging_dir(final), False


@contextlib.contextmanager
def resumable_staging(final: Path) -> Iterator[tuple[Path, bool]]:
    """(directory, resumable) to build `final` in: `.<key>.partial` beside it, which outlives a stopped process, so
    the next run with the same key carries on from that run's checkpoints (resumable: True). Held under an exclusive
    lock while in use; when another live process holds it, a private staging_dir instead (resumable: False: that
    run starts from zero and leaves the partial one alone). The empty lock file stays: removing it would let a waiting
    process and a new one each hold a lock on the same directory."""
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(final.parent)  # private staging directories that stopped processes left
    partial = final.with_name(f".{final.name}.partial")
    lock_path = final.with_name(f".{final.name}.partial.lock")
    with open(lock_path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            with private_staging(final) as staged:
                yield staged
            return
        try:
            partial.mkdir(exist_ok=True)
            yield partial, True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def remove_stale_staging(folder: Path) -> int:
    """Remove `.<key>.tmp<PID>` directories in `folder` whose process is gone; returns how many."""
    removed = 0
    for path in folder.glob(".*.tmp*") if folder.is_dir() else ():
        pid = path.name.rsplit(".tmp", 1)[-1]
        if path.is_dir() and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)  # signal 0: is there such a process (it may be another user's: then it is alive too)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def publish(tmp: Path, final: Path, meta: dict) -> None:
    """Checksum every file, write meta.json last and rename the finished directory into place."""
    files = {p.name: file_sha256(p) for p in sorted(tmp.iterdir()) if p.is_file()}
    (tmp / "meta.json").write_text(json.dumps({**meta, "sha256": files}, indent=2))
    shutil.rmtree(final, ignore_errors=True)  # a damaged entry that open_entry rejected
    try:
        os.replace(tmp, final)
    except OSError:  # another process finished the same entry first
        shutil.rmtree(tmp, ignore_errors=True)


def _discard(path: Path, why: str, what: str) -> None:
    warnings.warn(f"cached {what} {path.name} {why}; rebuilding it", stacklevel=3)
    shutil.rmtree(path, ignore_errors=True)


def open_entry(path: Path, what: str) -> dict | None:
    """meta.json of a verified cache entry, or None (and the entry removed) when it is absent or damaged."""
    if not path.exists():
        return None
    try:
        meta = json.loads((path / "meta.json").read_text())
        expected = meta["sha256"]
        if not isinstance(expected, dict) or not expected:
            raise KeyError("sha256")
    except (OSError, ValueError, KeyError, TypeError):
        _discard(path, "has no readable meta.json with checksums", what)
        return None
    for name, digest in expected.items():
        file = path / name
        if not file.is_file() or file_sha256(file) != digest:
            _discard(path, f"failed its checksum ({name} is missing or was changed)", what)
            return None
    return meta


def cached_result(
    path: Path, key: str, compute: Callable[[], T], to_dict: Callable[[T], dict], from_dict: Callable[[dict], T]
) -> T:
    """The result stored at `path` for `key`, or compute() stored there; a damaged file is recomputed."""
    if path.is_file():
        try:
            saved = json.loads(path.read_text())
            if saved.get("key") == key and saved.get("sha256") == payload_sha256(saved["result"]):
                return from_dict(saved["result"])
            if saved.get("key") == key:
                warnings.warn(f"cached result {path.name} failed its checksum; recomputing it", stacklevel=2)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            warnings.warn(f"cached result {path.name} is unreadable; recomputing it", stacklevel=2)
    result = compute()
    payload = to_dict(result)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"key": key, "sha256": payload_sha256(payload), "result": payload})
    return result
