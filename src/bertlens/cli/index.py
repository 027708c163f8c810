"""`bertlens index --data DIR|FILE --recipe R.json --out STORE`: a corpus into a vector store, resumable. Its flags
are derived from `IndexOptions` (api/index.py; cli/derived.py)."""

from __future__ import annotations

from bertlens.cli.console import progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "index",
    "bertlens.api.index:IndexOptions",
    "Embed a corpus with a recipe into a vector store (LanceDB directory, or --store URI for a server), with the "
    "recipe and its fingerprint beside the vectors. A killed run continues when rerun.",
    required={"data": "the documents to index"},
)


def run(options) -> None:
    from bertlens.api.index import run_index_command

    with progress_bar("index", unit="documents", enabled=not options.quiet) as update:
        outcome = run_index_command(options, progress=update)
    summary = outcome.summary
    say(
        f"indexed {summary.written} documents ({summary.rows} rows in the store) into {summary.store} in "
        f"{summary.seconds:.1f} s (embedding {summary.embed_seconds:.1f} s); recipe fingerprint {summary.fingerprint}"
        + "".join(f"; {n}" for n in outcome.notes)
    )
