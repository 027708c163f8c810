"""`bertlens finetune`: train one strategy on a task and save the model as a Hugging Face directory. Its flags are
derived from `FinetuneOptions` (api/finetune.py; cli/derived.py)."""

from __future__ import annotations

from bertlens.cli.console import progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "finetune",
    "bertlens.api.finetune:FinetuneOptions",
    "Fine-tune encoder + head (+ a ScalarMix recipe's weights); the result works as --model for every command.",
    required={"out": "the model directory to write (an interrupted run resumes here)"},
    python_only=("texts",),  # texts in memory come with their labels, which only Python can give
)


def run(options) -> None:
    from bertlens.api.finetune import run_finetune_command

    source = options.task or options.data
    with progress_bar(f"finetune {source} ({options.strategy})", unit="steps", enabled=not options.quiet) as update:
        done = run_finetune_command(options, progress=update)
    row = done.rows()[0]
    say(
        f"{done.task} ({row['strategy']}, {row['train_examples']} examples): dev {done.metric} {row['dev']:.4f} "
        f"(epoch {row['best_epoch']}), test {row['test']:.4f}, {row['seconds']:.0f} s"
    )
    say(f"saved {options.out} (use --model {options.out}, or --recipe {options.out}/recipe.json)")
