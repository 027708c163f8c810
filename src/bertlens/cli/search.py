"""`bertlens search --index STORE --query TEXT [--queries FILE] --top-k K [--recipe R.json] [--out F.json|.parquet]`.
Its flags are derived from `SearchOptions` (api/search.py; cli/derived.py).

An index made from an ONNX export (`index --backend onnx`) is searched with that export, found from the index's
record (or `--backend onnx --model DIR`)."""

from __future__ import annotations

from bertlens.cli.console import say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "search",
    "bertlens.api.search:SearchOptions",
    "Search an index made by `bertlens index`: each query embedded with the index's own recipe (its query prompt "
    "included), the k best documents (a chunked document scores its best chunk).",
    required={"index": "the store `bertlens index` wrote"},
    out_is_dir=False,
)


def run(options) -> None:
    from bertlens.api.search import run_search_command

    outcome = run_search_command(options)
    for note in outcome.notes:
        say(note)
    if options.out is None:
        for line in outcome.lines():
            print(line)
        return
    say(f"wrote {len(outcome.hits)} results of {outcome.queries} queries to {options.out}")
