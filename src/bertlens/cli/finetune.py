"""`bertlens finetune`: train one strategy on a task and save the model as a Hugging Face directory."""

from __future__ import annotations

import argparse

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import progress_bar, say
from bertlens.cli.options import (
    add_recipe_options,
    add_run_options,
    add_training_options,
    recipe_from_args,
    training_config,
)
from bertlens.cli.sources import add_task_options, load_task


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "finetune",
        help=COMMANDS["finetune"],
        description="Fine-tune encoder + head (+ a ScalarMix recipe's weights); the result "
        "works as --model for every command.",
    )
    add_task_options(parser)
    add_recipe_options(parser)
    parser.add_argument(
        "--strategy", default="full", help="full, partial:K, gradual, llrd[:DECAY], each with optional +reinit:K"
    )
    parser.add_argument("--size", help="train on a seeded subset of this many examples (default: all)")
    parser.add_argument("--max-dev", type=int, help="at most this many dev examples (scored every epoch)")
    add_training_options(parser)
    add_run_options(parser, None, "model directory to write (an interrupted run resumes here)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from bertlens.experiments.finetune import run_finetune
    from bertlens.io.run_context import RunContext

    task = load_task(args)
    config = training_config(args, args.seed)
    with progress_bar(f"finetune {task.name} ({args.strategy})", unit="steps", enabled=not args.quiet) as update:
        run = RunContext(
            out=args.out,
            seed=args.seed,
            progress=update,
            trust_remote_code=args.trust_remote_code,
            restart=args.restart,
        )
        outcome = run_finetune(
            task, recipe_from_args(args), args.strategy, config, run, size=args.size, max_dev=args.max_dev
        )
    result = outcome.result
    say(
        f"{task.name} ({outcome.strategy}, {outcome.train_examples} examples): dev {task.metric} {result.best_dev:.4f} "
        f"(epoch {result.best_epoch + 1}), test {outcome.test:.4f}, {result.seconds:.0f} s"
    )
    say(f"saved {args.out} (use --model {args.out}, or --recipe {args.out}/recipe.json)")
