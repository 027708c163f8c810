"""The sweep's long-document readings deployed (issue #39): each one's nDCG@10 through LanceDB against the sweep's.

Usage: python bench/maxp_deployed.py [--model default] [--collection cranfield]

`bertlens sweep --long-documents` (mean pooling, every layer mix, fp32, float32 bank) scores the best candidate's
documents read seven ways (head_tail, windows, independent and late 64-token chunks; mean or maxp). Each reading
is then a recipe: its documents are indexed into LanceDB (a maxp recipe as one row per chunk), the scoring queries
searched exactly (a document scores its best row), and nDCG@10 computed by the sweep's own metric code.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

from bertlens.cli.main import main as cli
from bertlens.embedding.embedder import Embedder
from bertlens.experiments.index import run_index
from bertlens.probing.candidates import enumerate_candidates
from bertlens.representation.recipe import Recipe
from bertlens.stores.lance import LanceStore
from bertlens.tasks.retrieval import load_beir, query_split
from common import DATA, lscpu_summary
from store_search import store_figure


def swept(root: Path, model: str, work: Path) -> tuple[dict[str, float], str, str]:
    """(reading -> the sweep's nDCG@10, the candidate the readings were scored for, the recommended candidate)."""
    out = work / "sweep"
    argv = ["sweep", "--data", str(root), "--drop-invalid", "--model", model, "--poolers", "mean"]
    argv += ["--long-documents", "--precision", "fp32", "--bank-dtype", "float32", "--out", str(out)]
    with contextlib.redirect_stdout(io.StringIO()):
        if cli([*argv, "--cache-dir", str(work / "c"), "--quiet"]):
            raise SystemExit("the sweep failed")
    result = json.loads((out / "results.json").read_text())
    read = [r for r in result["rows"] if "~" in r["candidate"] and r["metric"] == "ndcg@10"]
    (best,) = {r["candidate"].split("~")[0] for r in read}
    return {r["candidate"].split("~")[1]: r["value"] for r in read}, best, result.get("recommended", "?")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="default")
    parser.add_argument("--collection", default="cranfield")
    args = parser.parse_args()
    root = DATA / "retrieval" / args.collection
    collection = load_beir(root, drop_invalid=True)
    split = query_split(collection, 0)
    documents = dict(zip(collection.doc_ids, collection.documents, strict=True))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        readings, best, recommended = swept(root, args.model, work)
        sweep_seconds = time.perf_counter() - start
        print(f"model {args.model}, fp32; {args.collection}: {len(documents):,} documents, {len(split.test)} scoring "
              f"queries; sweep {sweep_seconds:.0f} s, recommended {recommended}; CPU: {lscpu_summary()}")  # fmt: skip
        base_encoder = Embedder(Recipe(model=args.model, precision="fp32")).encoder
        (candidate,) = [c for c in enumerate_candidates(base_encoder.num_layers, ("mean",)) if c.name == best]
        base = Recipe(model=args.model, precision="fp32", max_length=base_encoder.max_length)
        print("| reading of " + best + " | sweep nDCG@10 | through LanceDB | difference | rows | index time |")
        print("|---|---|---|---|---|---|")
        for reading, figure in readings.items():
            encoder = Embedder(candidate.recipe(base).replace(long_text=reading), encoder=base_encoder)
            store = LanceStore(work / f"{reading.replace(':', '-')}.lance")
            summary = run_index(documents, encoder, store)
            found = store_figure(store, encoder, collection, split)
            print(f"| {reading} | {figure:.4f} | {found:.4f} | {abs(found - figure):.1e} | {summary.rows:,} | "
                  f"{summary.seconds:.1f} s |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
