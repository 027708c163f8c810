"""`bertlens recommend`: measure the data and say what to do (length, domain, representation, fine-tuning,
latency), with the evidence behind each decision."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import print_table, progress_bar, say
from bertlens.cli.options import add_run_options
from bertlens.cli.sources import add_task_options


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "recommend",
        help=COMMANDS["recommend"],
        description="Measure your data within a time budget and recommend: text length strategy, domain "
        "adaptation, the representation (a sweep), frozen vs fine-tuned, and the serving precision; each decision "
        "with its evidence, rule and confidence. Writes report.md/.html, results.json and recipe.json.",
    )
    add_task_options(
        parser,
        texts="texts alone, no labels: the representation is chosen by label-free measures (and fine-tuning is "
        "skipped)",
    )
    parser.add_argument("--model", default="default", help="'default', a local model directory or a hub id")
    parser.add_argument("--budget-minutes", type=float, default=15.0, help="time for all measurements (default 15)")
    parser.add_argument("--latency-budget-ms", type=float, help="per-text latency the served model must meet")
    parser.add_argument("--throughput-target", type=float, help="texts/s the served model must reach")
    parser.add_argument(
        "--alternatives",
        nargs="+",
        type=Path,
        default=(),
        metavar="PATH",
        help="faster things to serve, timed next to the recipe in the latency step: `export` directories (ONNX, "
        "int8) and `distill` output directories or recipe files",
    )
    parser.add_argument(
        "--no-int8",
        action="store_true",
        help="skip the latency step's own ONNX int8 export (gated on your texts, written to OUT/onnx-int8; about "
        "a minute on 2 cores for a 6-layer model)",
    )
    parser.add_argument(
        "--prompts",
        action="append",
        metavar="NAME=QUERY_PROMPT|DOCUMENT_PROMPT",
        help="retrieval data: prompt sets the representation step scores too (as `sweep --prompts`)",
    )
    parser.add_argument("--cache-dir", type=Path, help="feature-bank cache (default: inside --out)")
    add_run_options(parser, None, "output directory (finished steps are reused when rerun)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from bertlens.api.recommend import RecommendOptions, run_recommend_command

    options = RecommendOptions(
        **{f.name: getattr(args, f.name) for f in fields(RecommendOptions) if hasattr(args, f.name)}
    )
    with progress_bar("recommend", unit="steps", enabled=not args.quiet) as update:
        outcome = run_recommend_command(options, progress=update, notify=say)
    result, out = outcome.result, args.out
    print_table(
        f"recommend: {result.task}",
        ["step", "decision", "how sure"],
        [[d.step, d.decision, d.confidence] for d in result.decisions],
    )
    say(f"report: {out / 'report.md'} and {out / 'report.html'}; recipe: {out / 'recipe.json'}")
