"""`bertlens domain`: measure how far your text is from what the model was trained on, and say whether to adapt. Its
flags are derived from `DomainOptions` (api/domain.py; cli/derived.py)."""

from __future__ import annotations

from pathlib import Path

from bertlens.cli.console import print_table, progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "domain",
    "bertlens.api.domain:DomainOptions",
    "Tokenizer fit and the model's own masked-LM surprise on your text vs a reference corpus, with intervals and a "
    "verdict (adapt with `bertlens pretrain` or not).",
    defaults={"out": Path("out/domain")},
    required={"texts": "your texts"},
)


def run(options) -> None:
    from bertlens.api.domain import run_domain_command
    from bertlens.reports.domain import fit_rows

    with progress_bar("domain", unit="steps", enabled=not options.quiet) as update:
        done = run_domain_command(options, progress=update)
    result = done.result
    header, rows = fit_rows(result)
    print_table(f"{result.model}: your text vs {result.reference}", header, rows)
    for note in result.notes:
        say(f"note: {note}")
    say(done.verdict)
    say(f"wrote {options.out / 'report.md'} and {options.out / 'results.json'}")
