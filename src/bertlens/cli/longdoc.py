"""`bertlens longdoc`: compare truncation, windows and chunk classifiers on long documents."""

from __future__ import annotations

import argparse
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import progress_bar, say
from bertlens.cli.options import add_recipe_options, add_run_options, recipe_from_args
from bertlens.cli.sources import add_task_options, folds_of, load_task
from bertlens.errors import BertlensError


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "longdoc",
        help=COMMANDS["longdoc"],
        description="Score head / tail / head+tail truncation, strided windows with each "
        "aggregate, and chunk classifiers on a document classification task.",
    )
    add_task_options(parser)
    add_recipe_options(parser)
    parser.add_argument(
        "--strategies",
        default="all",
        help="comma list of head, tail, head_tail[:H], windows[:STRIDE][:mean|max|first|weighted], "
        "hier:attention, hier:gru; 'all' (default): head, tail, head_tail, windows:mean, windows:max and both hier",
    )
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--max-examples", type=int, help="a seeded sample of at most N documents")
    add_run_options(parser, Path("out/longdoc"))
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from bertlens.encoding.encoder import Encoder
    from bertlens.experiments.longdoc import (
        DEFAULT_STRATEGIES,
        LongDocConfig,
        check_strategies,
        compare_long_text,
        documents,
    )
    from bertlens.reports.longdoc import markdown_table, write_outputs

    named = tuple(s.strip() for s in args.strategies.split(",") if s.strip())
    strategies = check_strategies(DEFAULT_STRATEGIES if named == ("all",) else named)
    task = load_task(args)
    split = documents(task)
    recipe = recipe_from_args(args)
    if recipe.long_text:
        raise BertlensError("--long-text picks one strategy for embed/sweep; longdoc compares --strategies")
    encoder = Encoder(
        recipe.model,
        max_length=recipe.max_length,
        precision=recipe.precision,
        attentions="cls" if recipe.needs_attentions else "none",
        trust_remote_code=args.trust_remote_code,
        device=args.device,
    )
    with progress_bar(f"longdoc {task.name}", unit="docs", enabled=not args.quiet) as update:
        result = compare_long_text(
            encoder,
            recipe.replace(max_length=encoder.max_length),
            list(split.texts_a),
            split.targets,
            strategies,
            task=task.name,
            config=LongDocConfig(folds=folds_of(args), seed=args.seed, resamples=args.resamples),
            progress=update,
        )
    paths = write_outputs(result, args.out)
    say("\n".join(markdown_table(result)))
    say(f"wrote {paths['report']} and {paths['results']}")
