"""`bertlens embed INPUT --out OUT.npy|.parquet`: vectors for every text, resumable."""

from __future__ import annotations

import argparse
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import progress_bar, say
from bertlens.cli.options import add_recipe_options, recipe_from_args
from bertlens.embedding.embedder import Embedder
from bertlens.embedding.job import EMPTY_POLICIES, check_output, run_embed
from bertlens.io.tables import TableSpec, check_file, parse_column


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "embed",
        help=COMMANDS["embed"],
        description="Embed every text of a file. Killed runs resume where they stopped when rerun.",
    )
    parser.add_argument("input", type=Path, help=".txt (one text a line), .csv/.tsv (--column) or .jsonl (--field)")
    parser.add_argument(
        "--out", type=Path, required=True, help="output .npy (rows in input order) or .parquet (id, embedding)"
    )
    parser.add_argument("--column", help="CSV/TSV text column: header name, or 0-based index")
    parser.add_argument("--no-header", action="store_true", help="the CSV/TSV file has no header row")
    parser.add_argument("--multiline", action="store_true", help="CSV quoted fields really span lines (see README)")
    parser.add_argument("--field", help="JSONL field holding the text")
    parser.add_argument(
        "--empty", choices=EMPTY_POLICIES, default="error", help="what to do with empty texts (default: error)"
    )
    parser.add_argument("--shard-size", type=int, default=4096, help="texts per resumable shard (default 4096)")
    parser.add_argument("--restart", action="store_true", help="discard an unfinished run for OUT and start over")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_recipe_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    column = args.field if args.field is not None else args.column
    spec = TableSpec(
        args.input,
        () if column is None else (parse_column(column),),
        header=not args.no_header,
        multiline=args.multiline,
    )
    check_file(spec.path)
    check_output(args.out)  # before the model loads: a bad --out fails in a second, not after the run
    embedder = Embedder(recipe_from_args(args), trust_remote_code=args.trust_remote_code)
    with progress_bar("embed", enabled=not args.quiet) as update:
        summary = run_embed(
            spec,
            args.out,
            embedder,
            empty=args.empty,
            shard_size=args.shard_size,
            restart=args.restart,
            progress=update,
        )
    notes = []
    if summary.truncated:
        notes.append(
            f"{summary.truncated} texts were longer than {embedder.encoder.max_length} tokens and were truncated"
        )
    if summary.skipped_empty:
        notes.append(f"{summary.skipped_empty} empty texts skipped")
    if summary.resumed_shards:
        notes.append(f"resumed after {summary.resumed_shards} finished shards")
    say(f"wrote {summary.rows} x {summary.dim} vectors to {summary.out}" + "".join(f"; {n}" for n in notes))
