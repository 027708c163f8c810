"""Write-then-rename helpers: a reader never sees a half-written file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np


def temporary_sibling(path: Path, suffix: str = "") -> Path:
    return path.with_name(f".{path.name}.tmp{os.getpid()}{suffix}")


def write_text(path: Path, text: str) -> None:
    tmp = temporary_sibling(path)
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_json(path: Path, data: dict) -> None:
    tmp = temporary_sibling(path)
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def write_npz(path: Path, **arrays: np.ndarray) -> None:
    tmp = temporary_sibling(path, ".npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)
