"""`bertlens compare`: frozen probe vs fine-tuning strategies, as learning curves with intervals."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from rich.table import Table

from bertlens.cli.finetune_options import add_training_options, training_config
from bertlens.cli.progress import STDERR, progress_bar
from bertlens.cli.recipe_options import add_recipe_options, recipe_from_args
from bertlens.cli.task_options import add_task_options, load_task
from bertlens.errors import BertlensError
from bertlens.evaluation.compare_report import markdown_table, write_outputs
from bertlens.models import resolve_model
from bertlens.tasks.catalog import CATALOG, data_dir, get_task
from bertlens.tasks.loaders import load_catalog_task
from bertlens.training.compare import CompareConfig, DriftProbe, payoff, resolve_sizes, run_compare, task_splits
from bertlens.training.strategies import parse_strategies

DRIFT_TRAIN, DRIFT_TEST = 1000, 500


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("compare", help="frozen features + linear probe vs fine-tuning strategies, by training size",
                                   description="Learning curves of a frozen probe and fine-tuning strategies, with intervals "
                                   "over seeds, wall time, the size where fine-tuning pays off, and representation drift.")
    add_task_options(parser)
    add_recipe_options(parser)
    parser.add_argument("--sizes", default="100,300,1000,3000", help="training sizes, comma list; 'full' = all of train")
    parser.add_argument("--frozen-sizes", default="full", help="extra sizes scored by the frozen probe only "
                        "(cheap; default 'full', the whole training split; '' for none)")
    parser.add_argument("--strategies", default="frozen,partial:4,full,gradual",
                        help="comma list of frozen, full, partial:K, gradual, llrd[:DECAY], each with optional +reinit:K")
    parser.add_argument("--seeds", type=int, default=3, help="number of seeds (0..N-1) per size and strategy")
    parser.add_argument("--drift-task", default=None, help="catalog task whose linear-probe score is watched for forgetting "
                        "(default: trec, or sst2 when tuning on trec; 'none' to skip)")
    parser.add_argument("--drift-texts", type=int, default=500, help="held-out test texts for per-layer CKA")
    parser.add_argument("--max-dev", type=int, help="at most this many dev examples (scored every epoch)")
    parser.add_argument("--seed", type=int, default=0, help="seed for loading/sampling the task")
    add_training_options(parser)
    parser.add_argument("--out", type=Path, default=Path("out/compare"), help="output directory (finished runs are reused)")
    parser.add_argument("--quiet", action="store_true")
    parser.set_defaults(run=run, max_examples=None)


def _drift_probe(args, task_name: str, seed: int) -> DriftProbe | None:
    name = args.drift_task or ("sst2" if task_name == "trec" else "trec")
    if name == "none":
        return None
    if name not in CATALOG or CATALOG[name].uses_cv or CATALOG[name].kind != "classification":
        raise BertlensError(f"--drift-task '{name}' must be a catalog classification task with a test split "
                            "(sst2 or trec), or 'none'")
    try:
        data = load_catalog_task(get_task(name), data_dir(args.data_dir))
    except BertlensError as exc:
        raise BertlensError(f"{exc} (needed for --drift-task {name}; pass --drift-task none to skip)") from None
    rng = np.random.default_rng(seed)
    train, test = data.splits["train"], data.splits["test"]
    pick = lambda split, n: split.subset(np.sort(rng.choice(len(split), min(n, len(split)), replace=False)))  # noqa: E731
    return DriftProbe(name, pick(train, DRIFT_TRAIN), pick(test, DRIFT_TEST))


def run(args: argparse.Namespace) -> None:
    if args.seeds < 1:
        raise BertlensError("--seeds must be at least 1")
    task = load_task(args)
    recipe = recipe_from_args(args)
    num_layers = resolve_model(recipe.model).num_layers
    strategies = parse_strategies(args.strategies, num_layers)
    train, _, _ = task_splits(task, args.max_dev)
    sizes = resolve_sizes(args.sizes, len(train))
    frozen_sizes = resolve_sizes(args.frozen_sizes, len(train)) if args.frozen_sizes.strip() else ()
    config = CompareConfig(sizes=sizes, strategies=strategies, frozen_sizes=frozen_sizes, seeds=tuple(range(args.seeds)),
                           train=training_config(args, 0), drift_texts=args.drift_texts, max_dev=args.max_dev)
    drift = _drift_probe(args, task.name, args.seed) if any(s.fine_tunes for s in strategies) else None
    with progress_bar(f"compare {task.name}", unit="runs", enabled=not args.quiet) as update:
        result = run_compare(task, recipe.model, recipe, config, args.out / "runs", drift=drift,
                             on_progress=lambda stage, done, total: update(done, total, stage))
    paths = write_outputs(result, args.out)
    table = Table(title=f"{task.name}: test {task.metric} (%), mean [95% CI over {args.seeds} seeds]")
    header, _, *rows = markdown_table(result)
    for column in header.strip("|").split("|"):
        table.add_column(column.strip())
    for row in rows:
        table.add_row(*[cell.strip() for cell in row.strip("|").split("|")])
    STDERR.print(table)
    STDERR.print(payoff(result))
    STDERR.print(f"wrote {paths['report']}, {paths['results']} and {paths['curves']}", soft_wrap=True, markup=False)
