"""`bertlens embed INPUT --out OUT.npy|.parquet`: vectors for every text, resumable."""

from __future__ import annotations

import argparse
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import progress_bar, say
from bertlens.cli.options import add_backend_options, add_recipe_options, encoder_from_args, recipe_from_args
from bertlens.errors import BertlensError
from bertlens.io.tables import EMPTY_POLICIES, TableSpec, check_file, parse_column


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "embed",
        help=COMMANDS["embed"],
        description="Embed every text of a file. Killed runs resume where they stopped when rerun.",
    )
    parser.add_argument(
        "input", type=Path, help=".txt (one text a line), .csv/.tsv/.parquet (--column) or .jsonl (--field)"
    )
    parser.add_argument(
        "--out", type=Path, required=True, help="output .npy (rows in input order) or .parquet (id, embedding)"
    )
    parser.add_argument(
        "--column", help="the text column (CSV/TSV/Parquet: header name or 0-based index) or field (JSONL)"
    )
    parser.add_argument("--no-header", action="store_true", help="the CSV/TSV file has no header row")
    parser.add_argument(
        "--multiline", action="store_true", help="CSV quoted fields really span lines (see docs/guide.md)"
    )
    parser.add_argument("--field", help="JSONL field holding the text (the same as --column)")
    parser.add_argument(
        "--empty", choices=EMPTY_POLICIES, default="error", help="what to do with empty texts (default: error)"
    )
    parser.add_argument("--shard-size", type=int, default=4096, help="texts per resumable shard (default 4096)")
    parser.add_argument("--restart", action="store_true", help="discard an unfinished run for OUT and start over")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--role",
        choices=("query", "document"),
        help="retrieval: embed the texts as queries or as documents (the recipe's query_prompt or document_prompt "
        "goes before each one)",
    )
    add_backend_options(parser)
    add_recipe_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from bertlens.embedding.job import check_output, run_embed
    from bertlens.embedding.prompted import with_role

    column = args.field if args.field is not None else args.column
    spec = TableSpec(
        args.input,
        () if column is None else (parse_column(column),),
        header=not args.no_header,
        multiline=args.multiline,
    )
    check_file(spec.path)
    check_output(args.out)  # before the model loads: a bad --out fails in a second, not after the run
    if args.backend == "torch":
        _check_role(recipe_from_args(args), args.role)  # before the model loads
    backend = encoder_from_args(args)
    _check_role(backend.recipe, args.role)
    embedder = with_role(backend, args.role)
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
        notes.append(f"{summary.truncated} texts were longer than {embedder.max_length} tokens and were truncated")
    if summary.skipped_empty:
        notes.append(f"{summary.skipped_empty} empty texts skipped")
    if summary.resumed_shards:
        notes.append(f"resumed after {summary.resumed_shards} finished shards")
    if args.precision == "auto":
        notes.append(f"precision auto -> {embedder.recipe.precision} ({backend.encoder.precision_reason})")
    if args.role and not embedder.recipe.prompt(args.role):
        notes.append(f"the recipe has no {args.role}_prompt: texts embedded as given")
    if summary.chunks:
        notes.insert(0, f"one row per chunk ({embedder.recipe.long_text}), with each text's id, chunk and characters"
                     + ("" if summary.out.suffix == ".parquet" else f" in {summary.out.stem}.chunks.npy"))  # fmt: skip
        say(f"wrote {summary.chunks} x {summary.dim} chunk vectors of {summary.rows} texts to {summary.out}"
            + "".join(f"; {n}" for n in notes))  # fmt: skip
        return
    say(f"wrote {summary.rows} x {summary.dim} vectors to {summary.out}" + "".join(f"; {n}" for n in notes))


def _check_role(recipe, role: str | None) -> None:
    """A recipe with prompts embeds each text as a query or a document: without --role the prompts would be
    silently left out, and the vectors would not be the ones the sweep scored."""
    prompts = {name: p for name, p in (("query", recipe.query_prompt), ("document", recipe.document_prompt)) if p}
    if role is None and prompts:
        shown = ", ".join(f"{name} {p!r}" for name, p in prompts.items())
        raise BertlensError(
            f"the recipe has prompts ({shown}): say which these texts are with --role query or --role document"
        )
