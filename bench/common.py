"""Shared helpers for benchmarks: offline set-up, the shared data location, timing."""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BERTLENS_DATA", REPO.parent / "shared" / "data"))


def sts_sentences() -> list[str]:
    """Every sentence of STS-B (train, dev, test), both sides, in file order."""
    texts = []
    for split in ("train", "dev", "test"):
        with open(DATA / "stsb" / f"{split}.csv", newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                texts.extend(row[:2])
    return texts


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start
