"""`bertlens contrastive`: SimCSE on raw sentences, or supervised contrastive training on positive pairs. Its flags
are derived from `ContrastiveOptions` (api/contrastive.py; cli/derived.py)."""

from __future__ import annotations

from bertlens.cli.console import progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "contrastive",
    "bertlens.api.contrastive:ContrastiveOptions",
    "Contrastive fine-tuning for similarity; writes a model directory that every command accepts as --model. Runs "
    "in the one training loop, so strategies, checkpoints and resume apply.",
    required={"out": "the model directory to write (an interrupted run resumes here)"},
)


def run(options) -> None:
    from bertlens.api.contrastive import run_contrastive_command

    with progress_bar(f"contrastive ({options.mode})", unit="steps", enabled=not options.quiet) as update:
        done = run_contrastive_command(options, progress=update)
    r, out = done.result, options.out
    say(
        f"{options.mode}: {done.examples} examples from {done.source}, {r.steps} steps, loss {r.first_loss:.3f} -> "
        f"{r.last_loss:.3f}, {r.seconds:.0f} s; saved {out} (use --model {out})"
    )
