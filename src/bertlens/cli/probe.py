"""`bertlens probe --suite linguistic`: which layers hold syntax and which hold sentence properties."""

from __future__ import annotations

import argparse
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import STDERR, print_table, progress_bar, say
from bertlens.cli.options import add_encoder_options, add_run_options
from bertlens.cli.sources import add_data_dir_option
from bertlens.encoding.names import SUBWORD_POOLING
from bertlens.errors import BertlensError
from bertlens.representation.choices import check_pooler
from bertlens.tasks.catalog import data_dir
from bertlens.tasks.conllu import load_treebank
from bertlens.tasks.probing_names import ALL_TASKS

SUITES = ("linguistic",)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "probe",
        help=COMMANDS["probe"],
        description="Probe every layer with linear probes on UD token tasks (with control tasks) and sentence tasks.",
    )
    parser.add_argument("--suite", choices=SUITES, required=True, help="which probing suite to run")
    parser.add_argument(
        "--treebank",
        type=Path,
        help="directory with train/dev/test .conllu files (default: ud-ewt under --data-dir / $BERTLENS_DATA)",
    )
    add_data_dir_option(parser)
    parser.add_argument(
        "--tasks", default=",".join(ALL_TASKS), help=f"comma list (default all): {', '.join(ALL_TASKS)}"
    )
    parser.add_argument(
        "--subword", choices=SUBWORD_POOLING, default="mean", help="word vector from its subword tokens"
    )
    parser.add_argument("--pooler", default="mean", help="sentence vector pooler for sentence tasks")
    parser.add_argument("--max-sentences", type=int, help="use the first N sentences of each split (quick runs)")
    parser.add_argument("--max-train-words", type=int, help="a seeded sample of N training words for token tasks")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument(
        "--cache-dir", type=Path, help="feature-bank cache (default $BERTLENS_CACHE or ~/.cache/bertlens)"
    )
    add_encoder_options(parser, model_default="default")
    add_run_options(parser, Path("out/probe"))
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from bertlens.encoding.encoder import Encoder
    from bertlens.experiments.linguistic import SuiteConfig, check_tasks, run_linguistic_suite
    from bertlens.io.cache import default_cache_dir
    from bertlens.reports.linguistic import summary_row, write_outputs

    tasks = check_tasks(tuple(t.strip() for t in args.tasks.split(",") if t.strip()))
    if not tasks:
        raise BertlensError("--tasks is empty; name at least one task")
    for flag in ("max_sentences", "max_train_words"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            raise BertlensError(f"--{flag.replace('_', '-')} must be at least 1")
    pooler = check_pooler(args.pooler)
    treebank = args.treebank or data_dir(args.data_dir) / "ud-ewt"
    splits = load_treebank(treebank, args.max_sentences)
    encoder = Encoder(
        args.model,
        max_length=args.max_length,
        precision=args.precision or "fp32",
        attentions="cls" if pooler == "attention" else "none",
        trust_remote_code=args.trust_remote_code,
        device=args.device,
    )
    config = SuiteConfig(
        tasks=tasks,
        subword=args.subword,
        sentence_pooler=pooler,
        seed=args.seed,
        resamples=args.resamples,
        max_train_words=args.max_train_words,
    )
    with progress_bar("linguistic suite", enabled=not args.quiet) as update:
        result = run_linguistic_suite(
            encoder,
            splits,
            default_cache_dir(args.cache_dir),
            config,
            datasets_dir=args.out / "datasets",
            checkpoint_dir=args.out / "tasks",
            progress=update,
        )
    paths = write_outputs(result, args.out)
    rows = []
    for outcome in result.outcomes.values():
        s = summary_row(outcome)
        rows.append(
            (
                outcome.name,
                f"{100 * s['layer0']:.1f}",
                str(s["best_layer"]),
                f"{100 * s['best']:.1f} [{100 * s['best_low']:.1f}, {100 * s['best_high']:.1f}]",
                f"{100 * s['mix']:.1f}",
                f"{s['centre_of_gravity']:.2f}",
                f"{100 * s['selectivity_at_best']:.1f}" if "selectivity_at_best" in s else "",
            )
        )
    print_table(
        f"linguistic probes: {result.model} (test accuracy %, best layer chosen on dev)",
        ("task", "layer 0", "best layer", "acc [95% CI]", "ScalarMix", "centre", "selectivity"),
        rows,
    )
    for note in result.notes:
        STDERR.print(f"[yellow]note:[/] {note}")
    say(
        f"wrote {paths['report']}, {paths['results']}, {paths['heatmap']} and {paths['curves']}; "
        f"datasets in {args.out / 'datasets'}"
    )
