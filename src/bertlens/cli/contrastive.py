"""`bertlens contrastive`: SimCSE on raw sentences, or supervised contrastive training on positive pairs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import progress_bar, say
from bertlens.cli.options import (
    add_recipe_options,
    add_run_options,
    add_training_options,
    recipe_from_args,
    training_config,
)
from bertlens.cli.sources import add_data_dir_option, add_texts_options, file_texts
from bertlens.errors import BertlensError
from bertlens.io.tables import TableSpec, parse_column
from bertlens.tasks.catalog import data_dir, get_task
from bertlens.training.config import CONTRASTIVE_DEFAULTS

if TYPE_CHECKING:  # annotations only: the module loads without heavy imports (`--help`)
    from bertlens.experiments.contrastive import Examples


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "contrastive",
        help=COMMANDS["contrastive"],
        description="Contrastive fine-tuning for similarity; writes a model directory that "
        "every command accepts as --model. Runs in the one training loop, so strategies, "
        "checkpoints and resume apply.",
    )
    parser.add_argument(
        "--mode",
        choices=("simcse", "pairs"),
        default="simcse",
        help="simcse: raw sentences, dropout as noise; pairs: (anchor, positive) pairs",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    add_texts_options(parser, "simcse: sentences", target=source)
    source.add_argument("--pairs", help="pairs: a CSV/TSV/JSONL file with --text-col and --text-col2")
    source.add_argument("--task", help="a catalog task: its texts (simcse) or its pairs scored >= --min-score (pairs)")
    parser.add_argument("--text-col", help="--pairs: anchor column (header name or 0-based index)")
    parser.add_argument("--text-col2", help="--pairs: positive column")
    parser.add_argument("--no-header", action="store_true", help="--pairs: the CSV/TSV has no header row")
    parser.add_argument(
        "--min-score", type=float, default=4.0, help="--task with pairs: keep training pairs scored at least this"
    )
    add_data_dir_option(parser)
    parser.add_argument("--max-texts", type=int, help="a seeded sample of at most N sentences or pairs")
    parser.add_argument(
        "--strategy", default="full", help="which encoder blocks train: full, partial:K, gradual, llrd[:D]"
    )
    parser.add_argument("--temperature", type=float, default=0.05, help="InfoNCE temperature (SimCSE: 0.05)")
    add_training_options(parser, CONTRASTIVE_DEFAULTS)
    add_run_options(parser, None, "model directory to write (an interrupted run resumes here)")
    add_recipe_options(parser)
    parser.set_defaults(run=run)


def _examples(args: argparse.Namespace) -> Examples:
    from bertlens.experiments.contrastive import Examples, file_pairs, task_pairs
    from bertlens.tasks.loaders import load_catalog_task

    if args.mode == "simcse":
        if args.pairs:
            raise BertlensError("--mode simcse takes --texts or --task; --pairs is for --mode pairs")
        if args.task:
            return Examples(
                load_catalog_task(get_task(args.task), data_dir(args.data_dir)).all_texts(), None, f"task {args.task}"
            )
        return Examples(file_texts(args.texts, args.column), None, str(args.texts))
    if args.texts:
        raise BertlensError("--mode pairs takes --pairs FILE or --task; --texts is for --mode simcse")
    if args.task:
        return task_pairs(load_catalog_task(get_task(args.task), data_dir(args.data_dir)), args.min_score)
    if args.text_col is None or args.text_col2 is None:
        raise BertlensError("--pairs needs --text-col and --text-col2 (the anchor and positive columns)")
    return file_pairs(
        TableSpec(
            Path(args.pairs), (parse_column(args.text_col), parse_column(args.text_col2)), header=not args.no_header
        )
    )


def run(args: argparse.Namespace) -> None:
    from bertlens.experiments.contrastive import run_contrastive

    examples = _examples(args).sample(args.max_texts, args.seed)
    config = training_config(args, args.seed)
    with progress_bar(
        f"{args.mode} on {len(examples.anchors)} examples", unit="steps", enabled=not args.quiet
    ) as update:
        result, _ = run_contrastive(
            examples,
            recipe_from_args(args),
            config,
            args.out,
            temperature=args.temperature,
            strategy_spec=args.strategy,
            restart=args.restart,
            trust_remote_code=args.trust_remote_code,
            progress=update,
        )
    say(
        f"{args.mode}: {len(examples.anchors)} examples from {examples.source}, {result.steps} steps, loss "
        f"{result.first_loss:.3f} -> {result.last_loss:.3f}, {result.seconds:.0f} s; saved {args.out} (use --model {args.out})"
    )
