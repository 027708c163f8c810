"""`bertlens probe --suite linguistic`: which layers hold syntax and which hold sentence properties. Its flags are
derived from `ProbeOptions` (api/probe.py; cli/derived.py)."""

from __future__ import annotations

from pathlib import Path

from bertlens.cli.console import STDERR, print_table, progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "probe",
    "bertlens.api.probe:ProbeOptions",
    "Probe every layer with linear probes on UD token tasks (with control tasks) and sentence tasks.",
    defaults={"out": Path("out/probe")},
)


def run(options) -> None:
    from bertlens.api.probe import run_probe_command

    with progress_bar("linguistic suite", enabled=not options.quiet) as update:
        done = run_probe_command(options, progress=update)
    rows = [
        (
            row["task"],
            f"{100 * row['layer0']:.1f}",
            str(row["best_layer"]),
            f"{100 * row['best']:.1f} [{100 * row['best_low']:.1f}, {100 * row['best_high']:.1f}]",
            f"{100 * row['mix']:.1f}",
            f"{row['centre_of_gravity']:.2f}",
            f"{100 * row['selectivity_at_best']:.1f}" if "selectivity_at_best" in row else "",
        )
        for row in done.rows()
    ]
    print_table(
        f"linguistic probes: {done.result.model} (test accuracy %, best layer chosen on dev)",
        ("task", "layer 0", "best layer", "acc [95% CI]", "ScalarMix", "centre", "selectivity"),
        rows,
    )
    for note in done.result.notes:
        STDERR.print(f"[yellow]note:[/] {note}")
    out = options.out
    say(
        f"wrote {out / 'report.md'}, {out / 'results.json'}, {out / 'heatmap.png'} and {out / 'curves.png'}; "
        f"datasets in {out / 'datasets'}"
    )
