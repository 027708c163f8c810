"""Does keeping the tokens win? Late interaction against the best pooled reading, per collection and model (issue #52).

Usage: python bench/late_interaction.py [--tasks cranfield,cisi,npl] [--models default,PATH] [--out DIR]

For each collection and model: `sweep --protocols cosine,late_interaction` (its timings, the best pooled and the best
late-interaction reading chosen on the choosing queries, both with test nDCG@10 and intervals, and their paired
difference); then both picks are indexed into LanceDB and the test queries searched one at a time through
`bertlens search`'s path: nDCG@10 through the store (it must equal the sweep's), index size per document (the Lance
rows on disk), and query latency p50/p99 (embedding the query included). LanceDB's own multi-vector scan is timed
on the first 10 queries beside the in-process MaxSim `search` uses. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from bertlens.embedding.embedder import Embedder
from bertlens.experiments.index import run_index
from bertlens.experiments.search import search_store
from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.metrics.ranking import ranking_metrics
from bertlens.reports.sweep import LATE_RECIPE, write_outputs
from bertlens.representation.recipe import Recipe
from bertlens.stores.lance import LanceStore
from bertlens.tasks.catalog import data_dir, get_task
from bertlens.tasks.loaders import load_catalog_task
from bertlens.tasks.retrieval import query_split
from common import lscpu_summary

NATIVE_QUERIES = 10  # LanceDB's own multi-vector scan is slow: timed on this many queries


def _disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def through_store(recipe: Recipe, collection, split, store_dir: Path) -> dict:
    """Index the collection with `recipe`, search the test queries one at a time; nDCG@10, size, latency."""
    embedder = Embedder(recipe)
    ids = [str(i) for i in range(len(collection.documents))]
    store = LanceStore(store_dir)
    start = time.perf_counter()
    run_index(dict(zip(ids, collection.documents, strict=True)), embedder, store, restart=True)
    index_seconds = time.perf_counter() - start
    queries = [collection.queries[q] for q in split.test]
    search_store(store, embedder, queries[:1], 10)  # warm: the column is read once per table version
    times, ranked = [], []
    for query in queries:
        start = time.perf_counter()
        hits = search_store(store, embedder, [query], 100)[0]
        times.append(time.perf_counter() - start)
        ranked.append([int(h.doc_id) for h in hits])
    ndcg = ranking_metrics(np.array(ranked), list(split.test_judgements))["ndcg@10"].mean()
    out = {
        "ndcg@10_store": float(ndcg),
        "index_seconds": index_seconds,
        "bytes_per_document": _disk_bytes(store_dir / "rows.lance") / len(ids),
        "p50_ms": float(np.percentile(times, 50) * 1000),
        "p99_ms": float(np.percentile(times, 99) * 1000),
    }
    if recipe.multi_vector and recipe.first_stage is None:  # LanceDB's own scan of every document, beside ours
        reader = embedder.for_queries()
        native = []
        for query in queries[:NATIVE_QUERIES]:
            start = time.perf_counter()
            store.search_tokens(reader.embed_tokens([query]), 100, native=True)
            native.append(time.perf_counter() - start)
        out["lancedb_native_p50_ms"] = float(np.percentile(native, 50) * 1000)
    return out


def _row(result, protocol: str, name: str) -> dict:
    p = result.protocols[protocol]
    i = [c.name for c in p.candidates].index(name)
    return {
        "candidate": name,
        "ndcg@10": float(p.test.value[i]),
        "low": float(p.test.low[i]),
        "high": float(p.test.high[i]),
    }


def measure(task_name: str, model: str, out: Path, cache: Path) -> dict:
    task = load_catalog_task(get_task(task_name), data_dir(None))
    start = time.perf_counter()
    config = SweepConfig(protocols=("cosine", "late_interaction"))
    result = run_sweep(task, model, Recipe(precision="auto", model=model), cache_dir=cache, config=config)
    sweep_seconds = time.perf_counter() - start
    where = out / f"{task_name}-{Path(model).name}"
    write_outputs(result, where)
    split = query_split(task.collection, result.seed)
    late = result.late_interaction
    pooled = _row(result, "cosine", result.recommended.name)
    tokens = _row(result, "late_interaction", late.candidate.name)
    with tempfile.TemporaryDirectory() as folder:
        pooled.update(through_store(Recipe.load(where / "recipe.json"), task.collection, split, Path(folder) / "p"))
        tokens.update(through_store(Recipe.load(where / LATE_RECIPE), task.collection, split, Path(folder) / "t"))
    return {
        "task": task_name,
        "model": result.model,
        "sweep_seconds": sweep_seconds,
        "timings": result.timings,
        "pooled": pooled,
        "late_interaction": tokens,
        "comparison": late.comparison,
        "rows": {c.name: float(v) for c, v in zip(result.protocols["late_interaction"].candidates,
                                                   result.protocols["late_interaction"].test.value, strict=True)},
        "bytes_per_document_float16": late.bytes_per_document,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="cranfield,cisi,npl")
    parser.add_argument("--models", default="default")
    parser.add_argument("--out", type=Path, default=Path("out/late_interaction"))
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args()
    print(lscpu_summary(), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="bertlens-late-"))
    for model in args.models.split(","):
        for task in args.tasks.split(","):
            found = measure(task, model, args.out, cache)
            (args.out / f"{task}-{Path(model).name}.json").write_text(json.dumps(found, indent=2) + "\n")
            p, t = found["pooled"], found["late_interaction"]
            print(
                f"{task} {found['model']}: pooled {p['candidate']} {p['ndcg@10']:.4f} [{p['low']:.4f}, "
                f"{p['high']:.4f}] store {p['ndcg@10_store']:.4f} {p['bytes_per_document']:.0f} B/doc p50 "
                f"{p['p50_ms']:.1f} ms p99 {p['p99_ms']:.1f} ms | late {t['candidate']} {t['ndcg@10']:.4f} "
                f"[{t['low']:.4f}, {t['high']:.4f}] store {t['ndcg@10_store']:.4f} {t['bytes_per_document']:.0f} "
                f"B/doc p50 {t['p50_ms']:.1f} ms p99 {t['p99_ms']:.1f} ms (LanceDB's own: "
                f"{t['lancedb_native_p50_ms']:.0f} ms) | {found['comparison']} | sweep {found['sweep_seconds']:.0f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
