"""`bertlens longdoc`: compare truncation, windows and chunk classifiers on long documents. Its flags are derived
from `LongdocOptions` (api/longdoc.py; cli/derived.py)."""

from __future__ import annotations

from pathlib import Path

from bertlens.cli.console import progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "longdoc",
    "bertlens.api.longdoc:LongdocOptions",
    "Score head / tail / head+tail truncation, strided windows with each aggregate, and chunk classifiers on a "
    "document classification task.",
    defaults={"out": Path("out/longdoc")},
    python_only=("texts",),  # documents in memory come with their labels, which only Python can give
)


def run(options) -> None:
    from bertlens.api.longdoc import run_longdoc_command
    from bertlens.reports.longdoc import markdown_table

    source = options.task or Path(options.data).stem
    with progress_bar(f"longdoc {source}", unit="docs", enabled=not options.quiet) as update:
        done = run_longdoc_command(options, progress=update)
    say("\n".join(markdown_table(done.result)))
    say(f"wrote {options.out / 'report.md'} and {options.out / 'results.json'}")
