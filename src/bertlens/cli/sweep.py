"""`bertlens sweep --task NAME | --data FILE ...`: score every representation choice, recommend one."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from bertlens.bank import DEFAULT_POOLERS
from bertlens.cli.progress import STDERR, cache_dir, progress_bar
from bertlens.cli.task_options import add_task_options, load_task
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.evaluation.report import leaderboard, recommended_score, write_outputs
from bertlens.probing.sweep import SweepConfig, run_sweep
from bertlens.representation.mixers import parse_layers
from bertlens.representation.poolers import check_pooler
from bertlens.representation.postprocess import parse_steps
from bertlens.representation.recipe import Recipe


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("sweep", help="score every token/layer/pooling choice on a task in one pass",
                                   description="Encode once, score every layer x pooler and layer mix, recommend a recipe.")
    add_task_options(parser)
    parser.add_argument("--model", help="'default', a model directory or a hub id")
    parser.add_argument("--layers", help="single layers to score (default all), e.g. '-4:' or '0,3,6'")
    parser.add_argument("--poolers", default=",".join(DEFAULT_POOLERS), help="comma list of poolers")
    parser.add_argument("--max-examples", type=int, help="at most this many examples per split (a seeded sample)")
    parser.add_argument("--max-length", type=int, help="token limit (default: the model's)")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--long-text", help="texts over the limit: head (default), tail, head_tail[:HEAD], "
                        "windows[:STRIDE][:mean|max|first|weighted] (compare them with `bertlens longdoc`)")
    parser.add_argument("--postprocess-steps", help="similarity tasks: also score every candidate after these steps, fitted "
                        "on the training texts (e.g. whiten, or center,abtt)")
    parser.add_argument("--exclude-special", action="store_true", help="pool without [CLS]/[SEP]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--cache-dir", type=Path, default=None, help="feature-bank cache (default $BERTLENS_CACHE or ~/.cache/bertlens)")
    parser.add_argument("--out", type=Path, default=Path("out/sweep"), help="output directory")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--trust-remote-code", action="store_true")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    if args.folds < 2:
        raise BertlensError("--folds must be at least 2")
    poolers = tuple(check_pooler(p.strip()) for p in args.poolers.split(",") if p.strip())
    task = load_task(args)
    # the sweep chooses layers, mixer and pooler; the user fixes only what is shared by every candidate
    base = Recipe(model=args.model or "default", max_length=args.max_length, precision=args.precision,
                  include_special=not args.exclude_special, long_text=args.long_text)
    encoder = Encoder(base.model, max_length=base.max_length, precision=base.precision,
                      attentions="cls" if "attention" in poolers else "none", trust_remote_code=args.trust_remote_code)
    layers = parse_layers(args.layers, encoder.num_layers) if args.layers else None
    cache = cache_dir(args.cache_dir)
    if args.postprocess_steps:
        parse_steps(args.postprocess_steps)
    config = SweepConfig(poolers=poolers, layers=layers, seed=args.seed, resamples=args.resamples, postprocess=args.postprocess_steps)
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
