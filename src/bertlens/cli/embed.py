"""`bertlens embed INPUT --out OUT.npy|.parquet`: vectors for every text, resumable. Its flags are derived from
`EmbedOptions` (api/embed.py; cli/derived.py); INPUT is its one positional option."""

from __future__ import annotations

from pathlib import Path

from bertlens.cli.console import progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "embed",
    "bertlens.api.embed:EmbedOptions",
    "Embed every text of a file. Killed runs resume where they stopped when rerun.",
    required={"out": "the .npy or .parquet file to write", "input": "the file of texts to embed"},
    positional=("input",),
    out_is_dir=False,
)


def run(options) -> None:
    from bertlens.api.embed import run_embed_command

    with progress_bar("embed", enabled=not options.quiet) as update:
        outcome = run_embed_command(options, progress=update)
    summary, recipe, notes = outcome.summary, outcome.recipe, outcome.notes()
    out: Path = summary.out
    if summary.chunks:
        notes.insert(0, f"one row per chunk ({recipe.long_text}), with each text's id, chunk and characters"
                     + ("" if out.suffix == ".parquet" else f" in {out.stem}.chunks.npy"))  # fmt: skip
        say(f"wrote {summary.chunks} x {summary.dim} chunk vectors of {summary.rows} texts to {out}"
            + "".join(f"; {n}" for n in notes))  # fmt: skip
        return
    say(f"wrote {summary.rows} x {summary.dim} vectors to {out}" + "".join(f"; {n}" for n in notes))
