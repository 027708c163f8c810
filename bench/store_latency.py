"""What a search costs at 100k documents, through each store, exact and approximate (issue #39).

Usage: python bench/store_latency.py [--docs 100000] [--stores lance,chroma]

The corpus is NPL padded with distractors to `--docs` documents (bench/retrieval_cost.py builds it), embedded
once by the default recipe (precision auto) as the baseline; then `run_index` embeds it again into LanceDB, so
index time is compared with embedding alone. The Chroma server (started here on the loopback) receives the same
vectors without a second encoding pass: its column is the store's own write time. NPL's 93 judged queries are
searched one at a time: p50/p99 latency of exact search and of the approximate index (LanceDB IVF-PQ; Chroma
HNSW, ef_search 64), the approximate top 10's recall against the exact top 10 (numpy's brute force over the
same vectors), and nDCG@10 of each.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from bertlens.embedding.embedder import Embedder
from bertlens.experiments.index import index_record, run_index
from bertlens.metrics.ranking import ranking_metrics
from bertlens.representation.recipe import Recipe
from bertlens.stores.chroma import local_chroma_server
from bertlens.stores.open import open_store
from bertlens.stores.rows import Rows
from bertlens.tasks.retrieval import load_beir
from common import lscpu_summary
from retrieval_cost import write_collection

WRITE_BATCH = 4096  # rows per store write when vectors are given (Chroma's client caps one add near 5,000)


def searched(store, queries: np.ndarray, exact: bool) -> tuple[list[float], list[list[str]]]:
    """Per query (one at a time): seconds, and the top-10 document ids."""
    times, tops = [], []
    for vector in queries:  # [D]
        start = time.perf_counter()
        hits = store.search(vector[None, :], 10, exact)[0]
        times.append(time.perf_counter() - start)
        tops.append([h.doc_id for h in hits])
    return times, tops


def ndcg10(tops: list[list[str]], doc_row: dict[str, int], judgements) -> float:
    ranked = np.array([[doc_row[d] for d in top] for top in tops])  # [Q, 10]
    return float(ranking_metrics(ranked, judgements)["ndcg@10"].mean())


def write_vectors(store, record, ids: list[str], texts: list[str], vectors: np.ndarray) -> float:
    """The store's own write time for precomputed vectors (one row per document)."""
    store.create(record)
    start = time.perf_counter()
    for first in range(0, len(ids), WRITE_BATCH):
        part = slice(first, first + WRITE_BATCH)
        count = len(ids[part])
        zeros = np.zeros(count, dtype=np.int32)
        ends = np.array([len(t) for t in texts[part]], dtype=np.int32)
        store.add(Rows(tuple(ids[part]), zeros, zeros, ends, tuple(texts[part]), vectors[part]))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--stores", default="lance,chroma")
    args = parser.parse_args()
    wanted = args.stores.split(",")
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as servers:
        work = Path(tmp)
        docs, _ = write_collection(work / "collection", args.docs)
        collection = load_beir(work / "collection", drop_invalid=True)
        documents = dict(zip(collection.doc_ids, collection.documents, strict=True))  # as the sweep reads them
        ids, texts = list(documents), list(documents.values())
        encoder = Embedder(Recipe(precision="auto"))
        print(f"{docs:,} documents (NPL + distractors), default model at {encoder.recipe.precision}; {lscpu_summary()}")
        start = time.perf_counter()
        vectors = encoder.encode(texts)  # [N, D]
        embed_alone = time.perf_counter() - start
        judged = collection.judged("test")
        queries = encoder.encode([collection.queries[q] for q in judged])  # [Q, D]
        judgements = [collection.qrels["test"][q] for q in judged]
        doc_row = {d: i for i, d in enumerate(collection.doc_ids)}
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)  # [N, D]
        best = np.argsort(-(queries @ unit.T), axis=1, kind="stable")[:, :10]  # [Q, 10] brute force
        truth = [[ids[j] for j in row] for row in best]
        print(f"embedding alone: {embed_alone:.1f} s ({docs / embed_alone:.0f} documents/s)")
        print(
            "| store | write | exact p50 / p99 | exact nDCG@10 | exact = brute force | approximate p50 / p99 | "
            "approximate recall@10 | approximate nDCG@10 | approximate index |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for label in wanted:
            if label == "lance":
                store = open_store(str(work / "store.lance"))
                summary = run_index(documents, encoder, store, restart=True, batch=4096)
                write = f"indexed in {summary.seconds:.1f} s: {summary.seconds / embed_alone:.2f}x embedding alone"
            else:
                prefix = servers.enter_context(local_chroma_server(work / "chroma"))
                store = open_store(prefix + "/latency")
                seconds = write_vectors(store, index_record(encoder), ids, texts, vectors)
                write = f"vectors written in {seconds:.1f} s ({docs / seconds:.0f} rows/s)"
            exact_times, exact_tops = searched(store, queries, True)
            agree = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact_tops, truth, strict=True)])
            built = store.build_ann()
            ann_times, ann_tops = searched(store, queries, False)
            recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ann_tops, truth, strict=True)])
            ms = [np.percentile(t, p) * 1e3 for t in (exact_times, ann_times) for p in (50, 99)]
            print(
                f"| {label} | {write} | {ms[0]:.1f} / {ms[1]:.1f} ms | {ndcg10(exact_tops, doc_row, judgements):.4f} "
                f"| {agree:.3f} | {ms[2]:.1f} / {ms[3]:.1f} ms | {recall:.3f} | "
                f"{ndcg10(ann_tops, doc_row, judgements):.4f} | {built} |",
                flush=True,
            )
        print(json.dumps({"documents": docs, "queries": len(judged), "embed_alone_s": round(embed_alone, 1)}))


if __name__ == "__main__":
    main()
