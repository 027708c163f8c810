"""The retrieval sweep's figure reproduced through a vector store, and what the store costs (issue #39).

Usage: python bench/store_search.py [--model default] [--collections cranfield,cisi,vaswani-npl] [--stores lance,chroma]

Per collection: `bertlens sweep --task-type retrieval` scores the last-layer mean (fp32, float32 bank) on its
scoring queries; the same recipe is indexed into each store (LanceDB embedded; a Chroma server this bench starts
on the loopback), the same queries searched exactly, and nDCG@10 computed by the sweep's own metric code. Then:
index time against `embed` alone on the same corpus (the store's share), exact and approximate (IVF-PQ) query
latency p50/p99 for one query at a time, and the approximate search's recall@10 against the exact top 10.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from bertlens.cli.main import main as cli
from bertlens.embedding.embedder import Embedder
from bertlens.experiments.index import run_index
from bertlens.experiments.search import search_store
from bertlens.metrics.ranking import ranking_metrics
from bertlens.representation.recipe import Recipe
from bertlens.stores.chroma import local_chroma_server
from bertlens.stores.open import open_store
from bertlens.tasks.retrieval import load_beir, query_split
from common import DATA, lscpu_summary


def sweep_figure(root: Path, model: str, work: Path) -> float:
    out = work / "sweep"
    argv = ["sweep", "--data", str(root), "--drop-invalid", "--model", model, "--poolers", "mean", "--layers", "-1"]
    argv.append("--precision")
    with contextlib.redirect_stdout(io.StringIO()):  # the sweep's table: only this bench's rows are printed
        code = cli(
            [*argv, "fp32", "--bank-dtype", "float32", "--out", str(out), "--cache-dir", str(work / "c"), "--quiet"]
        )
    if code:
        raise SystemExit("the sweep failed")
    rows = json.loads((out / "results.json").read_text())["rows"]
    (row,) = [
        r
        for r in rows
        if r["metric"] == "ndcg@10" and r["candidate"].startswith("mean/L") and "+" not in r["candidate"]
    ]
    return row["value"]


def store_figure(store, encoder, collection, split) -> float:
    found = search_store(store, encoder, [collection.queries[q] for q in split.test], 100)
    row = {d: i for i, d in enumerate(collection.doc_ids)}
    ranked = np.array([[row[h.doc_id] for h in hits] for hits in found])
    return float(ranking_metrics(ranked, list(split.test_judgements))["ndcg@10"].mean())


def latencies(store, vectors: np.ndarray, exact: bool) -> tuple[float, float, list[list[str]]]:
    times, tops = [], []
    for vector in vectors:
        start = time.perf_counter()
        hits = store.search(vector[None, :], 10, exact)[0]
        times.append(time.perf_counter() - start)
        tops.append([h.doc_id for h in hits])
    return float(np.percentile(times, 50)) * 1e3, float(np.percentile(times, 99)) * 1e3, tops


def one(name: str, model: str, work: Path, stores: dict[str, str]) -> None:
    root = DATA / "retrieval" / name
    collection = load_beir(root, drop_invalid=True)  # as the catalog loads it (Cranfield has 2 empty documents)
    split = query_split(collection, 0)
    recipe = Recipe(model=model, precision="fp32")
    encoder = Embedder(recipe)
    documents = dict(zip(collection.doc_ids, collection.documents, strict=True))
    start = time.perf_counter()
    encoder.encode(list(documents.values()))
    embed_alone = time.perf_counter() - start
    swept = sweep_figure(root, model, work)
    vectors = encoder.encode([collection.queries[q] for q in split.test])
    for label, where in stores.items():
        store = open_store(where.format(name=name.replace("-", "_")))
        summary = run_index(documents, encoder, store, restart=True)
        through_store = store_figure(store, encoder, collection, split)
        p50, p99, exact_tops = latencies(store, vectors, True)
        built = store.build_ann()
        a50, a99, ann_tops = latencies(store, vectors, False)
        recall = np.mean([len(set(a) & set(e)) / max(len(e), 1) for a, e in zip(ann_tops, exact_tops, strict=True)])
        print(
            f"| {name} | {label} | {len(documents):,} | {len(split.test)} | {swept:.4f} | {through_store:.4f} | "
            f"{abs(swept - through_store):.1e} | {embed_alone:.1f} s | {summary.seconds:.1f} s "
            f"({summary.seconds / embed_alone:.2f}x) | {p50:.1f} / {p99:.1f} ms | {a50:.1f} / {a99:.1f} ms | "
            f"{recall:.3f} | {built} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="default")
    parser.add_argument("--collections", default="cranfield,cisi,vaswani-npl")
    parser.add_argument("--stores", default="lance,chroma", help="lance (embedded), chroma (a server started here)")
    args = parser.parse_args()
    print(f"model {args.model}, fp32; CPU: {lscpu_summary()}")
    print(
        "| collection | store | documents | scoring queries | sweep nDCG@10 | through the store | difference | "
        "embed alone | index (ratio) | exact p50 / p99 | approximate p50 / p99 | approximate recall@10 | "
        "approximate index |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    wanted = args.stores.split(",")
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as servers:
        stores = {"LanceDB": str(Path(tmp) / "{name}.lance")} if "lance" in wanted else {}
        if "chroma" in wanted:
            stores["Chroma server"] = servers.enter_context(local_chroma_server(Path(tmp) / "chroma")) + "/{name}"
        for name in args.collections.split(","):
            one(name, args.model, Path(tmp), stores)


if __name__ == "__main__":
    main()
