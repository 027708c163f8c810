"""`bertlens postprocess`: fit whitening / all-but-the-top / centring on a corpus; save it into a recipe. Its flags are
derived from `PostprocessOptions` (api/postprocess.py; cli/derived.py)."""

from __future__ import annotations

from bertlens.api.postprocess import FILE
from bertlens.cli.console import progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "postprocess",
    "bertlens.api.postprocess:PostprocessOptions",
    f"Fit post-processing steps on the recipe's vectors of a corpus; writes OUT/{FILE} and OUT/recipe.json (use it "
    "with `bertlens embed --recipe`).",
    required={"out": "the directory for postprocess.safetensors and recipe.json"},
)


def run(options) -> None:
    from bertlens.api.postprocess import run_postprocess_command

    with progress_bar("postprocess", enabled=not options.quiet) as update:
        done = run_postprocess_command(options, progress=update)
    fitted, out = done.fitted, options.out
    say(
        f"fitted {fitted.name} on {done.texts} texts from {done.source} ({fitted.dim} -> {fitted.output_dim} dims); "
        f"wrote {out / FILE} and {out / 'recipe.json'}"
    )
