"""Late interaction as deployed: MaxSim re-ranking the pooled pick's top 100, through LanceDB (issue #52).

Usage: python bench/late_interaction_rerank.py --runs DIR [--out FILE]

DIR is bench/late_interaction.py's --out: per collection and model, its sweep's outputs (recipe.json, the pooled
pick; recipe.late_interaction.json, the late-interaction pick) and its figures (COLLECTION-MODEL.json: the pooled
and full-MaxSim picks through the store). Each late-interaction pick is given the pooled pick as its `first_stage`
(as the sweep writes it above 50,000 documents), indexed into LanceDB (both vectors, one encoder) and searched one
test query at a time: nDCG@10 through the store, index time and size per document, query latency p50/p99
(embedding the query both ways included), beside the same pick searching every document. Run it alone.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bertlens.reports.sweep import LATE_RECIPE
from bertlens.representation.recipe import RERANK_DEPTH, Recipe
from bertlens.tasks.catalog import data_dir, get_task
from bertlens.tasks.loaders import load_catalog_task
from bertlens.tasks.retrieval import query_split
from common import lscpu_summary
from late_interaction import through_store


def measure(figures: dict, where: Path) -> dict:
    pooled = Recipe.load(where / "recipe.json")
    deployed = Recipe.load(where / LATE_RECIPE).replace(
        first_stage=pooled.replace(dimension_loss=None), rerank_depth=RERANK_DEPTH
    )
    task = load_catalog_task(get_task(figures["task"]), data_dir(None))
    seed = json.loads((where / "results.json").read_text())["seed"]
    split = query_split(task.collection, seed)
    with tempfile.TemporaryDirectory() as folder:
        reranked = through_store(deployed, task.collection, split, Path(folder) / "r")
    return {"task": figures["task"], "model": figures["model"], "depth": RERANK_DEPTH, "reranked": reranked,
            "full": figures["late_interaction"], "pooled": figures["pooled"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    print(lscpu_summary(), flush=True)
    found = []
    for file in sorted(args.runs.glob("*.json")):
        figures = json.loads(file.read_text())
        row = measure(figures, args.runs / file.stem)
        found.append(row)
        r, f, p = row["reranked"], row["full"], row["pooled"]
        print(
            f"{row['task']} {row['model']}: re-ranked top {row['depth']} of {p['candidate']}: nDCG@10 "
            f"{r['ndcg@10_store']:.4f}, p50 {r['p50_ms']:.1f} ms p99 {r['p99_ms']:.1f} ms, index {r['index_seconds']:.0f} s "
            f"{r['bytes_per_document'] / 1024:.1f} KB/doc | every document ({f['candidate']}): {f['ndcg@10_store']:.4f}, "
            f"p50 {f['p50_ms']:.1f} ms p99 {f['p99_ms']:.1f} ms, index {f['index_seconds']:.0f} s | pooled "
            f"{p['ndcg@10_store']:.4f}, p50 {p['p50_ms']:.1f} ms",
            flush=True,
        )
    if args.out is not None:
        args.out.write_text(json.dumps(found, indent=2) + "\n")


if __name__ == "__main__":
    main()
