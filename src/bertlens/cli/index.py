"""`bertlens index --data DIR|FILE --recipe R.json --out STORE`: a corpus into a vector store, resumable."""

from __future__ import annotations

import argparse
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import progress_bar, say
from bertlens.cli.options import add_backend_options, add_recipe_options, encoder_from_args


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "index",
        help=COMMANDS["index"],
        description="Embed a corpus with a recipe into a vector store (LanceDB directory, or --store URI for a "
        "server), with the recipe and its fingerprint beside the vectors. A killed run continues when rerun.",
    )
    parser.add_argument(
        "--data",
        type=Path,
        required=True,
        help="a BEIR directory (corpus.jsonl), a .csv/.tsv/.jsonl/.parquet table (--text-col, --id-col) or a .txt "
        "file (one document a line; ids are line numbers)",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", help="a LanceDB directory (created when missing)")
    where.add_argument("--store", help="a server store: chroma://HOST:PORT/COLLECTION")
    parser.add_argument("--text-col", help="tables: the text column (header name or 0-based index)")
    parser.add_argument("--id-col", help="tables: the document id column (default: line numbers)")
    parser.add_argument("--encoding", default="utf-8", help="the corpus files' text encoding (default utf-8)")
    parser.add_argument(
        "--drop-invalid",
        action="store_true",
        help="drop empty documents and rows without an id (counted in the summary) instead of stopping",
    )
    parser.add_argument("--batch", type=int, default=512, help="documents per commit (default 512)")
    parser.add_argument("--restart", action="store_true", help="replace what the store holds and start over")
    parser.add_argument("--ann", action="store_true", help="also build the store's approximate index at the end")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_backend_options(parser)
    add_recipe_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from bertlens.experiments.index import run_index
    from bertlens.stores.open import open_store
    from bertlens.tasks.corpus import load_corpus

    corpus = load_corpus(args.data, args.text_col, args.id_col, args.encoding, drop_invalid=args.drop_invalid)
    store = open_store(args.out or args.store)
    encoder = encoder_from_args(args)
    with progress_bar("index", unit="documents", enabled=not args.quiet) as update:
        summary = run_index(corpus.documents, encoder, store, restart=args.restart, batch=args.batch, progress=update)
    notes = [f"resumed: {summary.skipped} documents were already there"] if summary.skipped else []
    if corpus.dropped:
        notes.append(f"dropped {corpus.describe_dropped()} (--drop-invalid)")
    if args.ann:
        notes.append("approximate index: " + store.build_ann())
    say(
        f"indexed {summary.written} documents ({summary.rows} rows in the store) into {summary.store} in "
        f"{summary.seconds:.1f} s (embedding {summary.embed_seconds:.1f} s); recipe fingerprint {summary.fingerprint}"
        + "".join(f"; {n}" for n in notes)
    )
