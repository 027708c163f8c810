"""Everything the GPU rows need, in `.gpu/` (ignored by git), for the device machine that reaches nothing outside.

Usage: python bench/device_prepare.py [--out .gpu] [--texts 100000]

Issue #63's GPU rows are measured by bench/device_rows.sh on a lent device (`run` with `carry: [".gpu"]`). The
device image has torch, transformers and sentence-transformers but cannot reach the shared data, the Hub or the
package registries, and a carry holds 64 MiB. This writes:
- `model/`: the default model (all-MiniLM-L6-v2) with its weights in float16 (45 MB instead of 91 MB), its
  tokenizer and sentence-transformers files as they are;
- `cloze.csv.gz`, `cloze10k.csv.gz`: bench/many_classes_data.py's 100-class cloze at `--texts` and 10,000 texts
  (the tasks bench/sweep_rows.py sweeps at those sizes);
- `sentences.txt.gz`: 10,000 distinct STS-B sentences drawn at random (seed 0); `documents.txt.gz`: 2,000 movie
  reviews cut at 256 tokens (the default model's limit), one a line;
- `whl/`: wheels (CPython 3.12, manylinux) of bertlens' dependencies the device image lacks, at constraints.txt's
  versions.
It refuses to finish above 60 MiB, so the carry stays within its limit beside the working tree.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

from common import DATA, REPO
from document_paths import cut
from many_classes_data import cloze_task

# bertlens' dependencies (and theirs) that the device image does not hold (device/KINDS.md's package list)
MISSING = ("cyclopts", "docstring_parser", "rich-rst", "clevercsv", "chardet", "iterative-stratification")
MODEL_FILES = (
    "config.json",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "1_Pooling/config.json",
)
LIMIT_MB = 60


def half_model(out: Path) -> Path:
    """The default model's files, its weights cast to float16."""
    import torch
    from safetensors.torch import load_file, save_file

    from bertlens.models import default_model_dir

    source = default_model_dir()
    for name in MODEL_FILES:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, out / name)
    weights = load_file(source / "model.safetensors")
    save_file({k: v.to(torch.float16) for k, v in weights.items()}, out / "model.safetensors", {"format": "pt"})
    return out


def write_gz(lines: list[str], path: Path) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def texts(model: Path, out: Path, size: int) -> None:
    """The cloze task, the sentences and the documents, gzipped."""
    from transformers import AutoTokenizer

    for name, count in (("cloze10k", 10_000), ("cloze", size)):
        with gzip.open(out / f"{name}.csv.gz", "wt", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label"])
            writer.writerows(cloze_task(DATA, count))  # the sample bench/sweep_rows.py sweeps at that size
    sentences = list(dict.fromkeys(t for split in ("train", "dev", "test") for row in csv.reader(
        (DATA / "stsb" / f"{split}.csv").open(encoding="utf-8")) for t in row[:2]))  # fmt: skip
    write_gz(random.Random(0).sample(sentences, 10_000), out / "sentences.txt.gz")
    reviews = [json.loads(line)["text"] for line in (DATA / "movie_reviews" / "reviews.jsonl").open(encoding="utf-8")]
    documents = cut(AutoTokenizer.from_pretrained(model), reviews[:2000], 256)
    write_gz([re.sub(r"\s+", " ", text).strip() for text in documents], out / "documents.txt.gz")


def wheels(out: Path) -> None:
    """The missing dependencies' wheels at the pinned versions, for the device's CPython 3.12."""
    pins = dict(line.split("==") for line in (REPO / "constraints.txt").read_text().split() if "==" in line)
    pins = {k.lower().replace("_", "-"): v for k, v in pins.items()}
    platforms = [f"--platform=manylinux_2_{n}_x86_64" for n in (17, 27, 28)] + ["--platform=manylinux2014_x86_64"]
    for name in MISSING:
        version = pins[name.lower().replace("_", "-")]
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
             "3.12", "--implementation", "cp", *platforms, "-d", str(out), f"{name}=={version}"],
            check=True,
        )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=REPO / ".gpu")
    parser.add_argument("--texts", type=int, default=100_000)
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    (args.out / "whl").mkdir(parents=True)
    model = half_model(args.out / "model")
    texts(model, args.out, args.texts)
    wheels(args.out / "whl")
    sizes = {p.relative_to(args.out): p.stat().st_size for p in args.out.rglob("*") if p.is_file()}
    total = sum(sizes.values()) / 2**20
    for path, size in sorted(sizes.items()):
        print(f"{size / 2**20:8.2f} MB  {path}")
    print(f"{total:.1f} MB in {args.out} (limit {LIMIT_MB} MB beside the working tree)")
    if total > LIMIT_MB:
        raise SystemExit(f"{args.out} holds {total:.1f} MB, over {LIMIT_MB}: lower --texts")


if __name__ == "__main__":
    main()
