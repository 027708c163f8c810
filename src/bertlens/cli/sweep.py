"""`bertlens sweep --task NAME | --data FILE ...`: score every representation choice, recommend one."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rich.table import Table

from bertlens.bank import DEFAULT_POOLERS
from bertlens.cli.progress import STDERR, progress_bar
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.evaluation.report import leaderboard, recommended_score, write_outputs
from bertlens.io.tables import parse_column
from bertlens.probing.sweep import SweepConfig, run_sweep
from bertlens.representation.mixers import parse_layers
from bertlens.representation.poolers import check_pooler
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import CATALOG, KINDS, data_dir, get_task
from bertlens.tasks.loaders import load_catalog_task, load_hf_task, load_user_task


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("sweep", help="score every token/layer/pooling choice on a task in one pass",
                                   description="Encode once, score every layer x pooler and layer mix, recommend a recipe.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--task", help=f"a catalog task: {', '.join(CATALOG)}; or hf:NAME[:CONFIG] for a Hugging Face "
                        "dataset (online; needs `pip install datasets` and --text-col/--label-col)")
    source.add_argument("--data", type=Path, help="your own CSV/TSV/JSONL file (with --text-col and --label-col)")
    parser.add_argument("--data-dir", help="where catalog tasks live (default $BERTLENS_DATA or ../shared/data)")
    parser.add_argument("--task-type", choices=KINDS, help="for --data: classification (default with one text column), "
                        "pair_classification, or similarity (default with two text columns)")
    parser.add_argument("--text-col", help="for --data: text column (header name or 0-based index)")
    parser.add_argument("--text-col2", help="for --data: second text column (pair tasks)")
    parser.add_argument("--label-col", help="for --data: label or score column")
    parser.add_argument("--no-header", action="store_true", help="for --data: the CSV/TSV has no header row")
    parser.add_argument("--folds", type=int, default=10, help="cross-validation folds for data without a test split")
    parser.add_argument("--drop-invalid", action="store_true", help="drop rows with blank text or label instead of failing")
    parser.add_argument("--model", help="'default', a model directory or a hub id")
    parser.add_argument("--layers", help="single layers to score (default all), e.g. '-4:' or '0,3,6'")
    parser.add_argument("--poolers", default=",".join(DEFAULT_POOLERS), help="comma list of poolers")
    parser.add_argument("--max-examples", type=int, help="at most this many examples per split (a seeded sample)")
    parser.add_argument("--max-length", type=int, help="token limit (default: the model's)")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--exclude-special", action="store_true", help="pool without [CLS]/[SEP]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--cache-dir", type=Path, default=None, help="feature-bank cache (default $BERTLENS_CACHE or ~/.cache/bertlens)")
    parser.add_argument("--out", type=Path, default=Path("out/sweep"), help="output directory")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--trust-remote-code", action="store_true")
    parser.set_defaults(run=run)


def _load_task(args):
    if args.task and args.task.startswith("hf:"):
        name, _, config = args.task[3:].partition(":")
        if args.text_col is None or args.label_col is None:
            raise BertlensError("--task hf:NAME needs --text-col and --label-col (and --text-col2 for pairs)")
        texts = tuple(c for c in (args.text_col, args.text_col2) if c is not None)
        kind = args.task_type or ("classification" if len(texts) == 1 else "similarity")
        return load_hf_task(name, kind=kind, text_cols=texts, label_col=args.label_col, config=config or None,
                            drop_invalid=args.drop_invalid, folds=args.folds, max_examples=args.max_examples, seed=args.seed)
    if args.task:
        return load_catalog_task(get_task(args.task), data_dir(args.data_dir), drop_invalid=args.drop_invalid,
                                 max_examples=args.max_examples, seed=args.seed)
    if args.text_col is None or args.label_col is None:
        raise BertlensError("--data needs --text-col and --label-col (and --text-col2 for pairs)")
    texts = tuple(parse_column(c) for c in (args.text_col, args.text_col2) if c is not None)
    kind = args.task_type or ("classification" if len(texts) == 1 else "similarity")
    return load_user_task(args.data, kind=kind, text_cols=texts, label_col=parse_column(args.label_col),
                          header=not args.no_header, drop_invalid=args.drop_invalid, folds=args.folds,
                          max_examples=args.max_examples, seed=args.seed)


def run(args: argparse.Namespace) -> None:
    if args.folds < 2:
        raise BertlensError("--folds must be at least 2")
    poolers = tuple(check_pooler(p.strip()) for p in args.poolers.split(",") if p.strip())
    task = _load_task(args)
    # the sweep chooses layers, mixer and pooler; the user fixes only what is shared by every candidate
    base = Recipe(model=args.model or "default", max_length=args.max_length, precision=args.precision,
                  include_special=not args.exclude_special)
    encoder = Encoder(base.model, max_length=base.max_length, precision=base.precision,
                      attentions="cls" if "attention" in poolers else "none", trust_remote_code=args.trust_remote_code)
    layers = parse_layers(args.layers, encoder.num_layers) if args.layers else None
    cache = args.cache_dir or Path(os.environ.get("BERTLENS_CACHE", Path.home() / ".cache" / "bertlens"))
    config = SweepConfig(poolers=poolers, layers=layers, seed=args.seed, resamples=args.resamples)
    if task.dropped:
        STDERR.print(f"dropped {task.dropped} invalid rows (--drop-invalid)")
    with progress_bar(f"sweep {task.name}", enabled=not args.quiet) as update:
        result = run_sweep(task, encoder, base.replace(max_length=encoder.max_length), cache, config,
                           on_progress=lambda stage, done, total: update(done, total, f"{task.name}: {stage}"))
    paths = write_outputs(result, args.out)
    for name, protocol in result.protocols.items():
        table = Table(title=f"{task.name}: {name} ({protocol.metric}, test, 95% CI)")
        for column in ("#", "candidate", "score [95% CI]", ""):
            table.add_column(column)
        for row in leaderboard(protocol):
            table.add_row(*row)
        STDERR.print(table)
    if result.disagreement:
        STDERR.print(f"[yellow]note:[/] {result.disagreement}")
    STDERR.print(f"recommended [bold]{result.recommended.name}[/] (test {recommended_score(result)}): {result.basis}")
    STDERR.print(f"wrote {paths['report']}, {paths['results']} and {paths['recipe']} (reproduce: bertlens embed FILE --recipe {paths['recipe']})",
                 soft_wrap=True, markup=False)
