"""`bertlens search --index STORE --query TEXT [--queries FILE] --top-k K [--recipe R.json] [--out F.json|.parquet]`.

An index made from an ONNX export (`index --backend onnx`) is searched with that export, found from the index's
record (or `--backend onnx --model DIR`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import say
from bertlens.errors import BertlensError
from bertlens.io.tables import first_lines
from bertlens.representation.choices import SERVED_BACKENDS

OUT_FORMATS = (".json", ".parquet")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "search",
        help=COMMANDS["search"],
        description="Search an index made by `bertlens index`: each query embedded with the index's own recipe "
        "(its query prompt included), the k best documents (a chunked document scores its best chunk).",
    )
    parser.add_argument("--index", required=True, help="the store: a LanceDB directory or chroma://HOST:PORT/NAME")
    parser.add_argument("--query", action="append", default=[], help="a query (repeat for several)")
    parser.add_argument("--queries", type=Path, help="a file of queries: .txt (one a line) or a BEIR queries.jsonl")
    parser.add_argument(
        "--drop-invalid",
        action="store_true",
        help="--queries .jsonl: drop lines without an _id or a text (counted) instead of stopping",
    )
    parser.add_argument("--top-k", type=int, default=10, help="documents per query (default 10)")
    parser.add_argument(
        "--recipe", type=Path, help="embed queries with this recipe (its fingerprint must be the index's)"
    )
    parser.add_argument(
        "--backend",
        choices=SERVED_BACKENDS,
        help="what embeds the queries (default: what made the index: onnx for an index made with --backend onnx, "
        "else torch)",
    )
    parser.add_argument(
        "--model", help="with --backend onnx: the export directory (default: the one the index was made from)"
    )
    parser.add_argument("--approximate", action="store_true", help="use the store's approximate index (--ann)")
    parser.add_argument("--out", type=Path, help="write every result to .json or .parquet instead of the terminal")
    parser.add_argument("--device", default="cpu", help="auto | cpu | cuda[:N] (default cpu)")
    parser.add_argument("--quiet", action="store_true", help="accepted for symmetry with index (search shows no bar)")
    parser.set_defaults(run=run)


def read_queries(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """(ids, texts): --query texts are numbered q1, q2, ...; a .txt file's by line (blank lines skipped); a BEIR
    file's by _id. A BEIR line without an _id or a text, or with an empty text, stops with its line number, or is
    dropped and counted with --drop-invalid."""
    ids, texts = [f"q{i + 1}" for i in range(len(args.query))], list(args.query)
    if args.queries is not None:
        path = args.queries
        if not path.is_file():
            raise BertlensError(f"--queries {path} does not exist")
        lines = path.read_text(encoding="utf-8").splitlines()
        if path.suffix == ".jsonl":
            found, bad = _beir_queries(path, lines)
            if bad and not args.drop_invalid:
                raise BertlensError(
                    f"{path}: {len(bad)} lines are not a query with an _id and a non-empty text (lines "
                    f"{first_lines(bad)}); fix them or pass --drop-invalid to drop them"
                )
            if bad:
                say(f"dropped {len(bad)} lines of {path} without an _id or a text (--drop-invalid)")
            ids += [i for i, _ in found]
            texts += [t for _, t in found]
        else:
            numbered = [(str(n), line) for n, line in enumerate(lines, start=1) if line.strip()]
            ids += [n for n, _ in numbered]
            texts += [line for _, line in numbered]
    if not texts:
        raise BertlensError("no query to search: give --query TEXT or --queries FILE")
    return ids, texts


def _beir_queries(path: Path, lines: list[str]) -> tuple[list[tuple[str, str]], list[int]]:
    """(id, text) of every well-formed line, and the numbers of the others (blank lines are neither)."""
    found, bad = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            query_id, text = str(record["_id"]).strip(), record["text"]
        except (json.JSONDecodeError, KeyError, TypeError):
            bad.append(number)
            continue
        if not query_id or not isinstance(text, str) or not text.strip():
            bad.append(number)
            continue
        found.append((query_id, text))
    return found, bad


def run(args: argparse.Namespace) -> None:
    from bertlens.experiments.search import open_index

    if args.top_k < 1:
        raise BertlensError(f"--top-k must be at least 1, got {args.top_k}")
    if args.out is not None and args.out.suffix not in OUT_FORMATS:
        raise BertlensError(f"--out {args.out}: use one of {', '.join(OUT_FORMATS)}")
    ids, queries = read_queries(args)
    index = open_index(args.index, recipe=args.recipe, backend=args.backend, model_dir=args.model, device=args.device)
    results = index.search(queries, args.top_k, exact=not args.approximate)
    rows = [
        {"query_id": q, "rank": rank, "doc_id": h.doc_id, "score": h.score, "chunk": h.chunk, "start": h.start,
         "end": h.end, "text": h.text}
        for q, hits in zip(ids, results, strict=True)
        for rank, h in enumerate(hits, start=1)
    ]  # fmt: skip
    if args.out is None:
        for row in rows:
            snippet = " ".join(row["text"][row["start"] : row["end"]].split())[:80]
            print(f"{row['query_id']}\t{row['rank']}\t{row['doc_id']}\t{row['score']:.4f}\t{snippet}")
        return
    _write(rows, args.out)
    say(f"wrote {len(rows)} results of {len(queries)} queries to {args.out}")


def _write(rows: list[dict], out: Path) -> None:
    from bertlens.io.atomic import atomic_path

    with atomic_path(out) as staging:
        if out.suffix == ".json":
            staging.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist(rows), staging)
