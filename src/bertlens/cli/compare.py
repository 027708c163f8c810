"""`bertlens compare`: frozen probe vs fine-tuning strategies, as learning curves with intervals."""

from __future__ import annotations

import argparse
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import print_table, progress_bar, say
from bertlens.cli.options import (
    add_recipe_options,
    add_run_options,
    add_training_options,
    recipe_from_args,
    training_config,
)
from bertlens.cli.sources import add_task_options, load_task
from bertlens.errors import BertlensError
from bertlens.models import resolve_model
from bertlens.tasks.catalog import data_dir
from bertlens.training.strategies import parse_strategies


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "compare",
        help=COMMANDS["compare"],
        description="Learning curves of a frozen probe and fine-tuning strategies, with intervals "
        "over seeds, wall time, the size where fine-tuning pays off, and representation drift.",
    )
    add_task_options(parser)
    add_recipe_options(parser)
    parser.add_argument(
        "--sizes", default="100,300,1000,3000", help="training sizes, comma list; 'full' = all of train"
    )
    parser.add_argument(
        "--frozen-sizes",
        default="full",
        help="extra sizes scored by the frozen probe only "
        "(cheap; default 'full', the whole training split; '' for none)",
    )
    parser.add_argument(
        "--strategies",
        default="frozen,partial:4,full,gradual",
        help="comma list of frozen, full, partial:K, gradual, llrd[:DECAY], each with optional +reinit:K",
    )
    parser.add_argument("--seeds", type=int, default=3, help="number of seeds (0..N-1) per size and strategy")
    parser.add_argument(
        "--drift-task",
        default=None,
        help="catalog task whose linear-probe score is watched for forgetting "
        "(default: trec, or sst2 when tuning on trec; 'none' to skip)",
    )
    parser.add_argument("--drift-texts", type=int, default=500, help="held-out test texts for per-layer CKA")
    parser.add_argument("--max-dev", type=int, help="at most this many dev examples (scored every epoch)")
    add_training_options(parser)
    add_run_options(parser, Path("out/compare"), "output directory (finished runs are reused)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from bertlens.experiments.compare import CompareConfig, drift_probe, payoff, run_compare
    from bertlens.reports.compare import table_rows, write_outputs

    if args.seeds < 1:
        raise BertlensError("--seeds must be at least 1")
    task = load_task(args)
    recipe = recipe_from_args(args)
    strategies = parse_strategies(args.strategies, resolve_model(recipe.model).num_layers)
    config = CompareConfig(
        sizes=args.sizes,  # resolved against the training split by run_compare, which makes it
        strategies=strategies,
        frozen_sizes=args.frozen_sizes,
        seeds=tuple(range(args.seeds)),
        train=training_config(args, 0),
        drift_texts=args.drift_texts,
        max_dev=args.max_dev,
    )
    drift = (
        drift_probe(args.drift_task, task.name, data_dir(args.data_dir), args.seed)
        if any(s.fine_tunes for s in strategies)
        else None
    )
    with progress_bar(f"compare {task.name}", unit="runs", enabled=not args.quiet) as update:
        result = run_compare(
            task, recipe.model, recipe, config, args.out / "runs", drift=drift, seed=args.seed, progress=update
        )
    paths = write_outputs(result, args.out)
    header, rows = table_rows(result)
    print_table(f"{task.name}: test {task.metric} (%), mean [95% CI over {args.seeds} seeds]", header, rows)
    say(payoff(result))
    say(f"wrote {paths['report']}, {paths['results']} and {paths['curves']}")
