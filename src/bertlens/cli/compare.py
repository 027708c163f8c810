"""`bertlens compare`: frozen probe vs fine-tuning strategies, as learning curves with intervals. Its flags are
derived from `CompareOptions` (api/compare.py; cli/derived.py)."""

from __future__ import annotations

from pathlib import Path

from bertlens.cli.console import print_table, progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "compare",
    "bertlens.api.compare:CompareOptions",
    "Learning curves of a frozen probe and fine-tuning strategies, with intervals over seeds, wall time, the size "
    "where fine-tuning pays off, and representation drift.",
    defaults={"out": Path("out/compare")},
    python_only=("texts",),  # texts in memory come with their labels, which only Python can give
)


def run(options) -> None:
    from bertlens.api.compare import run_compare_command
    from bertlens.reports.compare import table_rows

    source = options.task or Path(options.data).stem
    with progress_bar(f"compare {source}", unit="runs", enabled=not options.quiet) as update:
        done = run_compare_command(options, progress=update)
    result = done.result
    header, rows = table_rows(result)
    print_table(f"{result.task}: test {result.metric} (%), mean [95% CI over {options.seeds} seeds]", header, rows)
    say(done.payoff)
    out = options.out
    say(f"wrote {out / 'report.md'}, {out / 'results.json'} and {out / 'learning_curves.png'}")
