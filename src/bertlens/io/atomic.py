"""Write-then-rename: a reader never sees a half-written file, and a failed write leaves nothing behind.

Every file bertlens writes goes through `atomic_path` (or a helper built on it): the content
goes to a temporary sibling, which is renamed over the target only when writing succeeded.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def temporary_sibling(path: Path, suffix: str = "") -> Path:
    """A hidden name next to `path`, private to this process (`suffix` keeps writers that add extensions happy)."""
    return path.with_name(f".{path.name}.tmp{os.getpid()}{suffix}")


@contextlib.contextmanager
def atomic_path(path: Path, suffix: str = "") -> Iterator[Path]:
    """Yields a temporary path to write; renamed to `path` on success, removed on any failure."""
    path = Path(path)
    tmp = temporary_sibling(path, suffix or path.suffix)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def check_out_dir(path: Path) -> None:
    """An output directory that can be created and written, checked before any work (nothing is created here)."""
    from bertlens.errors import BertlensError

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise BertlensError(f"--out {path} is a file; give a directory (it is created when missing)")
    ancestor = next(p for p in (path, *path.parents) if p.exists())
    if not ancestor.is_dir():
        raise BertlensError(f"--out {path}: {ancestor} is a file, so the directory cannot be created there")
    try:
        probe, name = tempfile.mkstemp(prefix=".bertlens-write-check", dir=ancestor)
    except OSError as exc:
        raise BertlensError(
            f"--out {path}: cannot write in {ancestor} ({exc.strerror}); choose another --out"
        ) from None
    os.close(probe)
    os.unlink(name)


def write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: Path, data: dict) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def write_npz(path: Path, **arrays) -> None:
    with atomic_path(path, ".npz") as tmp:
        import numpy as np  # here, not at the top: Recipe (and so every --help) imports this module

        np.savez(tmp, **arrays)


def write_npy(path: Path, array) -> None:
    with atomic_path(path, ".npy") as tmp:
        import numpy as np

        np.save(tmp, array, allow_pickle=False)
