"""`bertlens geometry`: anisotropy diagnostics per layer and pooler (cosines, self-similarity, PCs, uniformity). Its
flags are derived from `GeometryOptions` (api/geometry.py; cli/derived.py)."""

from __future__ import annotations

from pathlib import Path

from bertlens.cli.console import progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "geometry",
    "bertlens.api.geometry:GeometryOptions",
    "Measure how anisotropic each layer's vectors are (Ethayarajh 2019; Wang & Isola 2020) on your texts.",
    defaults={"out": Path("out/geometry")},
)


def run(options) -> None:
    from bertlens.api.geometry import run_geometry_command
    from bertlens.reports.geometry import markdown_table

    source = options.task or (options.texts if isinstance(options.texts, str | Path) else "texts")
    with progress_bar(f"geometry ({source})", enabled=not options.quiet) as update:
        done = run_geometry_command(options, progress=update)
    say("\n".join(markdown_table(done.rows())))
    out = options.out
    say(f"wrote {out / 'report.md'}, {out / 'results.json'} and {out / 'geometry.png'}")
