"""What a retrieval sweep costs compared with one encoding pass of its corpus and queries (issue #26: <= 2x).

Usage: python bench/retrieval_cost.py [--docs 100000] [--precision auto]

The collection is NPL (11,429 physics abstracts, 93 judged queries) from the shared data; with
`--docs N` above that, the corpus is padded to N documents with distractors (every distinct sentence
of the shared corpora, bench/many_classes_data.py, then their pairs joined), so the judged documents
have to be found among N. It is written as a BEIR directory, then, each in a fresh process with its peak
RSS and an empty cache: `bertlens embed` of every document and query (the baseline: default recipe,
precision auto) and `bertlens sweep --data DIR` (every layer x pooler x mix and each whitened, exact top-100
for every query, the bootstrap). Prints wall time, ratio to embed, peak RSS and the sweep's stage timings.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from common import DATA, lscpu_summary, print_against_embed, run_measured
from many_classes_data import corpus_sentences


def write_collection(root: Path, docs: int | None) -> tuple[int, int]:
    """NPL, padded with distractor documents to `docs`; (documents, queries) written."""
    source = DATA / "retrieval" / "vaswani-npl"
    shutil.copytree(source, root)
    corpus = [json.loads(line) for line in (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    if docs and docs > len(corpus):
        sentences = corpus_sentences(DATA)
        pool = sentences + [f"{a} {b}" for a, b in zip(sentences, sentences[1:])]
        if docs - len(corpus) > len(pool):
            raise SystemExit(f"only {len(pool) + len(corpus)} documents can be built; ask for fewer")
        corpus += [{"_id": f"x{i}", "title": "", "text": text} for i, text in enumerate(pool[: docs - len(corpus)])]
        (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    queries = (root / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    texts = [f"{d['title']} {d['text']}".strip() for d in corpus] + [json.loads(q)["text"] for q in queries]
    (root.parent / "texts.txt").write_text("\n".join(t.replace("\n", " ") for t in texts) + "\n", encoding="utf-8")
    return len(corpus), len(queries)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=None, help="pad the corpus to this many documents")
    parser.add_argument("--precision", default="auto", help="the sweep's encoding precision (embed's default is auto)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        docs, queries = write_collection(work / "collection", args.docs)
        print(
            f"collection: {docs:,} documents, {queries} queries (NPL + distractors); default model; {lscpu_summary()}"
        )
        runs = {
            "bertlens embed (baseline)": ["embed", str(work / "texts.txt"), "--out", str(work / "v.npy"), "--quiet"],
            f"bertlens sweep (retrieval, --precision {args.precision})": [
                *("sweep", "--data", str(work / "collection"), "--precision", args.precision),
                *("--out", str(work / "sweep"), "--cache-dir", str(work / "cache"), "--quiet"),
            ],
        }
        measured = {name: run_measured(argv) for name, argv in runs.items()}
        result = json.loads((work / "sweep" / "results.json").read_text())
    print_against_embed(measured, result["timings"])
    rows = {r["candidate"]: r for r in result["rows"] if r["metric"] == "ndcg@10"}
    best = rows[result["recommended"]]
    print(
        f"{len(rows)} candidates; recommended {result['recommended']}: nDCG@10 {best['value']:.4f} "
        f"[{best['ci_low']:.4f}, {best['ci_high']:.4f}]"
    )


if __name__ == "__main__":
    main()
