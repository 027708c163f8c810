"""Named arrays with string metadata in one safetensors file (no pickle): written atomically, read back with one
line for a missing or unreadable file. Fitted post-processors and token projections are stored this way."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bertlens.errors import BertlensError
from bertlens.io.atomic import temporary_sibling


def save_arrays(path: str | Path, arrays: dict[str, np.ndarray], metadata: dict[str, str]) -> Path:
    from safetensors.numpy import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(path, ".safetensors")
    save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(tmp), metadata=metadata)
    tmp.replace(path)
    return path


def read_arrays(path: str | Path, what: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(arrays, metadata) of a safetensors file; `what` names it in the error ('post-processor file')."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise BertlensError(f"{what} {path} does not exist")
    try:
        with safe_open(str(path), framework="numpy") as handle:
            return {name: handle.get_tensor(name) for name in handle.keys()}, handle.metadata() or {}
    except SafetensorError as exc:
        raise BertlensError(f"{path}: not a readable safetensors file ({exc})") from None
