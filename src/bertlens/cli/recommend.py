"""`bertlens recommend`: measure the data and say what to do (length, domain, representation, fine-tuning,
latency), with the evidence behind each decision."""

from __future__ import annotations

import argparse
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import print_table, progress_bar, say
from bertlens.cli.options import add_run_options
from bertlens.cli.sources import add_task_options, load_task
from bertlens.errors import BertlensError
from bertlens.tasks.catalog import data_dir


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
    from bertlens.io.run_context import RunContext
    from bertlens.probing.candidates import parse_prompt_set
    from bertlens.reports.recommend import write_outputs
    from bertlens.workflows.latency_step import load_alternative
    from bertlens.workflows.recommend import RecommendOptions, run_recommend

    if args.budget_minutes <= 0:
        raise BertlensError("--budget-minutes must be positive")
    for flag in ("latency_budget_ms", "throughput_target"):
        value = getattr(args, flag)
        if value is not None and value <= 0:
            raise BertlensError(f"--{flag.replace('_', '-')} must be positive")
    alternatives = tuple(load_alternative(path) for path in args.alternatives)  # checked before any measuring
    prompt_sets = tuple(parse_prompt_set(p) for p in args.prompts or ())
    task = _texts_task(args) if args.texts is not None else load_task(args)
    with progress_bar("recommend", unit="steps", enabled=not args.quiet) as update:
        options = RecommendOptions(
            args.budget_minutes,
            args.latency_budget_ms,
            args.throughput_target,
            alternatives,
            own_int8=not args.no_int8,
            data=data_dir(args.data_dir),
            prompt_sets=prompt_sets,
            sources=command_sources(args),
        )
        result = run_recommend(task, args.model, RunContext(args.out, args.cache_dir, args.seed, update), options)
    paths = write_outputs(result, args.out)
    print_table(
        f"recommend: {result.task}",
        ["step", "decision", "how sure"],
        [[d.step, d.decision, d.confidence] for d in result.decisions],
    )
    say(f"report: {paths['report']} and {paths['html']}; recipe: {paths['recipe']}")


def _texts_task(args: argparse.Namespace):
    """--texts FILE: the distinct non-blank texts, as a task without labels."""
    from bertlens.cli.sources import unlabelled_texts
    from bertlens.tasks.loaders import texts_task

    texts, skipped = unlabelled_texts(args)
    if skipped:
        say(skipped)
    return texts_task(args.texts.stem, texts)


DATA_FLAGS = (
    *("task", "data", "data_dir", "task_type", "text_col", "text_col2", "label_col", "split_col", "test", "dev"),
    *("encoding", "folds"),
)
DATA_SWITCHES = ("no_header", "label_first", "multiline")


def command_sources(args: argparse.Namespace):
    """What the printed commands' DATA and TEXTS stand for: the flags that read this run's data, and a file of its
    texts (a table's text column, a BEIR corpus, the --texts file), so each printed command runs as printed."""
    from bertlens.workflows.decision import CommandSources

    flags = [f"--{name.replace('_', '-')} {getattr(args, name)}" for name in DATA_FLAGS if getattr(args, name, None)]
    flags += [f"--{name.replace('_', '-')}" for name in DATA_SWITCHES if getattr(args, name, False)]
    texts = "TEXTS"
    if args.texts is not None:
        texts = f"{args.texts}" + (f" --column {args.column}" if args.column else "")
    elif args.data is not None and args.data.is_dir():
        texts = f"{args.data / 'corpus.jsonl'} --column text"
    elif args.data is not None and args.text_col is not None and not args.label_first:
        texts = f"{args.data} --column {args.text_col}" + (" --no-header" if args.no_header else "")
    data = " ".join(flags) if args.texts is None else f"--texts {texts}"
    return CommandSources(data=data, texts=texts)
