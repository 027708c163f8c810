"""`bertlens longdoc`: compare truncation, windows and chunk classifiers on long documents."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bertlens.cli.progress import STDERR, progress_bar
from bertlens.cli.recipe_options import add_recipe_options, recipe_from_args
from bertlens.cli.task_options import add_task_options, load_task
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.evaluation.long_text_report import markdown_table, write_outputs
from bertlens.probing.long_text_compare import DEFAULT_STRATEGIES, check_strategies, compare_long_text
from bertlens.tasks.loaders import Split


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("longdoc", help="compare long-text strategies (truncation, windows, chunk classifiers)",
                                   description="Score head / tail / head+tail truncation, strided windows with each "
                                   "aggregate, and chunk classifiers on a document classification task.")
    add_task_options(parser)
    add_recipe_options(parser)
    parser.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES),
                        help="comma list: head, tail, head_tail[:H], windows[:STRIDE][:mean|max|first|weighted], "
                        "hier:attention, hier:gru")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--max-examples", type=int, help="a seeded sample of at most N documents")
    parser.add_argument("--out", type=Path, default=Path("out/longdoc"))
    parser.add_argument("--quiet", action="store_true")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    strategies = check_strategies(tuple(s.strip() for s in args.strategies.split(",") if s.strip()))
    task = load_task(args)
    if task.kind != "classification":
        raise BertlensError(f"longdoc compares strategies on document classification; '{task.name}' is {task.kind}")
    split = task.splits["all"] if "all" in task.splits else None
    if split is None:  # a task with its own splits: pool them, the comparison cross-validates
        parts = list(task.splits.values())
        split = Split(tuple(t for p in parts for t in p.texts_a), None, np.concatenate([p.targets for p in parts]))
    recipe = recipe_from_args(args)
    if recipe.long_text:
        raise BertlensError("--long-text picks one strategy for embed/sweep; longdoc compares --strategies")
    encoder = Encoder(recipe.model, max_length=recipe.max_length, precision=recipe.precision,
                      attentions="cls" if recipe.needs_attentions else "none", trust_remote_code=args.trust_remote_code)
    with progress_bar(f"longdoc {task.name}", unit="docs", enabled=not args.quiet) as update:
        result = compare_long_text(encoder, recipe.replace(max_length=encoder.max_length), list(split.texts_a), split.targets,
                                   strategies, task=task.name, folds=args.folds, seed=args.seed, resamples=args.resamples,
                                   on_progress=lambda stage, done, total: update(done, total, stage))
    paths = write_outputs(result, args.out)
    STDERR.print("\n".join(markdown_table(result)), markup=False, soft_wrap=True)
    STDERR.print(f"wrote {paths['report']} and {paths['results']}", markup=False, soft_wrap=True)
