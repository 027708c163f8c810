"""The core commands give the same numbers under two stacks (issue #48): e.g. transformers 4.57 + huggingface_hub
0.x + sentence-transformers 5.7 against transformers 5.x + huggingface_hub 1.x+ + sentence-transformers 6.x.

Each interpreter (a venv with bertlens installed) runs, alone and in turn, on the default model (all-MiniLM-L6-v2):
embed (fp32, normalised) of 400 STS-B sentences, checked against that stack's own sentence-transformers; sweep
--task stsb --max-examples 300 --seed 1; probe (upos, sentence_length on 400 UD sentences); finetune (SST-2, 64
examples, one epoch); recommend (SST-2 as a CSV, 1-minute budget, no int8); export --format sentence-transformers.
Then the figures of the two stacks are compared.

Usage: python bench/stack_parity.py --python A/bin/python --python B/bin/python [--out bench/out/stack-parity]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BERTLENS_DATA", REPO.parent / "shared" / "data"))

STACK = (
    "import importlib.metadata as m, json; print(json.dumps({p: m.version(p) for p in "
    "('torch', 'transformers', 'huggingface_hub', 'tokenizers', 'sentence-transformers')}))"
)
ST_VECTORS = (
    "import sys, numpy as np; from sentence_transformers import SentenceTransformer; "
    "from bertlens.models import default_model_dir; "
    "texts = open(sys.argv[1]).read().splitlines(); "
    "np.save(sys.argv[2], SentenceTransformer(str(default_model_dir()), device='cpu').encode(texts))"
)


def inputs(work: Path) -> tuple[Path, Path]:
    """400 STS-B sentences to embed; SST-2's first 400 training lines as a labelled CSV for recommend."""
    with open(DATA / "stsb" / "test.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))[:200]
    texts = work / "texts.txt"
    texts.write_text("\n".join([r[0] for r in rows] + [r[1] for r in rows]) + "\n")
    table = work / "sst2.csv"
    with open(table, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for line in (DATA / "sst2" / "train.txt").read_text().splitlines()[:400]:
            label, text = line.split(" ", 1)
            writer.writerow([text, label])
    return texts, table


def commands(texts: Path, table: Path, out: Path) -> dict[str, list[str]]:
    return {
        "embed": ["embed", str(texts), "--precision", "fp32", "--normalize", "--out", str(out / "embed.npy")],
        "sweep": ["sweep", "--task", "stsb", "--max-examples", "300", "--seed", "1", "--out", str(out / "sweep")],
        "probe": ["probe", "--suite", "linguistic", "--tasks", "upos,sentence_length", "--max-sentences", "400",
                  "--out", str(out / "probe"), "--cache-dir", str(out / "cache")],
        "finetune": ["finetune", "--task", "sst2", "--size", "64", "--epochs", "1", "--precision", "fp32",
                     "--out", str(out / "finetune")],
        "recommend": ["recommend", "--data", str(table), "--text-col", "text", "--label-col", "label",
                      "--budget-minutes", "1", "--no-int8", "--out", str(out / "recommend"),
                      "--cache-dir", str(out / "cache")],
        "export-st": ["export", "--format", "sentence-transformers", "--texts", str(texts), "--out", str(out / "st")],
    }  # fmt: skip


def run_stack(python: str, texts: Path, table: Path, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "BERTLENS_DATA": str(DATA)}
    versions = json.loads(subprocess.run([python, "-c", STACK], capture_output=True, text=True, check=True).stdout)
    print(f"{python}: {versions}", flush=True)
    seconds = {}
    for name, argv in commands(texts, table, out).items():
        start = time.perf_counter()
        done = subprocess.run([python, "-m", "bertlens", *argv, "--quiet"], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            sys.exit(f"{name} failed under {python}: {done.stderr.strip()[-2000:]}")
        seconds[name] = time.perf_counter() - start
        print(f"  {name}: {seconds[name]:.0f} s", flush=True)
    subprocess.run([python, "-c", ST_VECTORS, str(texts), str(out / "st.npy")], check=True, env=env)
    return {"versions": versions, "seconds": seconds}


TIMES = ("second", "time", "timing", "per_s", "rate", "took", "elapsed", "version", "peak", "rss")


def numbers(value, key: str = "") -> dict[str, float]:
    """Every number in a results file by its path, less times, rates and versions (they differ run to run)."""
    if isinstance(value, dict):
        return {k: v for name, item in value.items() for k, v in numbers(item, f"{key}.{name}").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in numbers(item, f"{key}[{i}]").items()}
    if isinstance(value, bool) or not isinstance(value, int | float) or any(t in key.lower() for t in TIMES):
        return {}
    return {key: float(value)}


def gap(a: Path, b: Path) -> str:
    """The largest difference between the two stacks' numbers in one results file."""
    left, right = numbers(json.loads(a.read_text())), numbers(json.loads(b.read_text()))
    shared = sorted(set(left) & set(right))
    worst = max(shared, key=lambda k: abs(left[k] - right[k]))
    only = len(set(left) ^ set(right))
    return f"{len(shared)} numbers, max |A - B| {abs(left[worst] - right[worst]):.1e} (at {worst})" + (
        f", {only} in one only" if only else ""
    )


def compare(a: Path, b: Path) -> list[str]:
    embed_a, embed_b = np.load(a / "embed.npy"), np.load(b / "embed.npy")
    lines = [
        f"embed: max |A - B| {np.abs(embed_a - embed_b).max():.1e}; each against its own sentence-transformers: "
        f"A {np.abs(embed_a - np.load(a / 'st.npy')).max():.1e}, B {np.abs(embed_b - np.load(b / 'st.npy')).max():.1e}"
    ]
    for name, file in (("sweep", "sweep/results.json"), ("probe", "probe/results.json"),
                       ("finetune", "finetune/training.json"), ("recommend", "recommend/results.json")):  # fmt: skip
        lines.append(f"{name}: {gap(a / file, b / file)}")
    for name, file in (("sweep", "sweep/recipe.json"), ("recommend", "recommend/recipe.json")):
        recipes = [json.loads((d / file).read_text()) for d in (a, b)]
        same = [{k: v for k, v in r.items() if k != "model"} for r in recipes]  # the model's path is per venv
        same = same[0] == same[1]
        lines.append(f"{name} recipe: {'same' if same else 'differs'}")
    diffs = [json.loads((d / "st" / "bertlens-export.json").read_text())["parity"]["max_abs_diff"] for d in (a, b)]
    lines.append(f"export --format sentence-transformers: parity A {diffs[0]:.1e}, B {diffs[1]:.1e}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", required=True, help="an interpreter with bertlens (give two)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "stack-parity")
    args = parser.parse_args()
    if len(args.python) != 2:
        parser.error("give --python twice: the two stacks to compare")
    args.out.mkdir(parents=True, exist_ok=True)
    texts, table = inputs(args.out)
    stacks = [run_stack(python, texts, table, args.out / label) for python, label in zip(args.python, "AB")]
    for line in compare(args.out / "A", args.out / "B"):
        print(line)
    print(
        "seconds A/B:",
        {k: f"{stacks[0]['seconds'][k]:.0f}/{stacks[1]['seconds'][k]:.0f}" for k in stacks[0]["seconds"]},
    )


if __name__ == "__main__":
    main()
