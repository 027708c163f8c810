"""`bertlens sweep --task NAME | --data FILE ...`: score every representation choice, recommend one."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import STDERR, print_table, progress_bar, say
from bertlens.cli.options import add_encoder_options, add_run_options
from bertlens.cli.sources import add_task_options
from bertlens.representation.choices import DEFAULT_POOLERS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help=COMMANDS["sweep"],
        description="Encode once, score every layer x pooler and layer mix, recommend a recipe.",
    )
    add_task_options(
        parser,
        texts="texts alone, no labels: every candidate scored from label-free measures (effective rank, matrix "
        "entropy, anisotropy, alignment under dropout and word dropout, uniformity) and the best recommended",
    )
    add_encoder_options(parser)
    parser.add_argument("--layers", help="single layers to score (default all), e.g. '-4:' or '0,3,6'")
    parser.add_argument("--poolers", default=",".join(DEFAULT_POOLERS), help="comma list of poolers")
    parser.add_argument("--max-examples", type=int, help="at most this many examples per split (a seeded sample)")
    parser.add_argument(
        "--long-text",
        help="texts over the limit: head (default), tail, head_tail[:HEAD], "
        "windows[:STRIDE][:mean|max|first|weighted] (compare them with `bertlens longdoc`)",
    )
    parser.add_argument(
        "--postprocess-steps",
        help="similarity tasks: also score every candidate after these steps, fitted "
        "on the training texts (e.g. whiten, or center,abtt)",
    )
    parser.add_argument("--exclude-special", action="store_true", help="pool without [CLS]/[SEP]")
    parser.add_argument(
        "--long-documents",
        action="store_true",
        help="retrieval: also read the documents of the best candidate as head_tail, windows, independent 64-token "
        "chunks and late chunks, each aggregated by mean or scored by its best piece (one encoding pass per way of "
        "cutting: four)",
    )
    parser.add_argument(
        "--prompts",
        action="append",
        metavar="NAME=QUERY_PROMPT|DOCUMENT_PROMPT",
        help="retrieval: also score every candidate with these prompts before queries and documents (one more "
        "encoding pass each; repeat for several), e.g. --prompts 'e5=query: |passage: '",
    )
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument(
        "--protocols",
        help="comma list of protocols to run (default: all the task supports). Similarity: cosine (no training; "
        "what a recommendation is made by) and probe (a ridge probe on pair features, costly under cross-validation); "
        "classification: probe (what a recommendation is made by) and clustering (V-measure of k-means with k = the "
        "number of labels, as MTEB; opt in with --protocols probe,clustering). Both, and similarity: label_free (the "
        "scores --texts uses, and how far they can be trusted on this task: their correlation with the labelled score, "
        "the label-free pick's regret, and how often a choice from 25-500 labels lands on the best)",
    )
    parser.add_argument(
        "--bank-dtype",
        choices=("float16", "float32"),
        default="float16",
        help="precision of the stored feature bank: float16 halves memory and disk; float32 makes every score equal "
        "to what the recommended recipe gives (whitening can amplify float16 rounding on ill-conditioned spaces)",
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="feature-bank cache (default $BERTLENS_CACHE or ~/.cache/bertlens)"
    )
    add_run_options(parser, Path("out/sweep"))
    parser.set_defaults(run=run)


def options_from(args: argparse.Namespace):
    """The parsed flags as the command's options (each flag's destination is the option's name)."""
    from bertlens.api.sweep import SweepOptions

    return SweepOptions(**{f.name: getattr(args, f.name) for f in fields(SweepOptions) if hasattr(args, f.name)})


def run(args: argparse.Namespace) -> None:
    from bertlens.api.sweep import run_sweep_command

    options = options_from(args)
    source = args.task or Path(args.data or args.texts).stem
    label = f"sweep {source}" + (" (texts alone)" if args.texts is not None else "")
    with progress_bar(label, enabled=not args.quiet) as update:
        outcome = run_sweep_command(options, progress=update, notify=say)
    if args.texts is not None:
        return _report_texts(outcome, args)
    _report(outcome, args.out)


def _report(outcome, out: Path) -> None:
    from bertlens.reports.sweep import leaderboard, recommended_score

    result = outcome.result
    for name, protocol in result.protocols.items():
        print_table(
            f"{result.task}: {name} ({protocol.metric}, {protocol.split}, 95% CI)",
            ("#", "candidate", "score [95% CI]", ""),
            leaderboard(protocol),
        )
    if result.disagreement:
        STDERR.print(f"[yellow]note:[/] {result.disagreement}")
    STDERR.print(f"recommended [bold]{result.recommended.name}[/] ({recommended_score(result)}): {result.basis}")
    if result.trust is not None:
        print_trust(result.trust)
    main = result.main
    if main.selection is not None:
        s = main.selection
        say(
            f"the choice, cross-validated (chosen per fold on inner dev): {main.metric} {s.value[0]:.4f} "
            f"[{s.low[0]:.4f}, {s.high[0]:.4f}]"
        )
    say("tied with best: the paired-bootstrap interval of (best - candidate) includes 0")
    say(
        f"wrote {out / 'report.md'}, {out / 'results.json'} and {out / 'recipe.json'} "
        f"(reproduce: bertlens embed FILE --recipe {out / 'recipe.json'})"
    )


def print_trust(trust) -> None:
    """How far the label-free pick holds on this labelled task, and how many labels settle the choice."""
    from bertlens.reports.sweep import trust_lines

    for line in trust_lines(trust):
        say(line)


def _report_texts(outcome, args: argparse.Namespace) -> None:
    """sweep --texts FILE: no labels; the label-free protocol chose."""
    from bertlens.probing.label_free import CATALOG_TRUST
    from bertlens.reports.sweep import leaderboard

    result, protocol = outcome.result, outcome.result.main
    print_table(
        f"{result.task}: label-free (combined rank score, {protocol.split}, 95% range)",
        ("#", "candidate", "score [95% range]", ""),
        leaderboard(protocol),
    )
    STDERR.print(
        f"recommended [bold]{result.recommended.name}[/] from {protocol.n_test} texts, no labels: {result.basis}"
    )
    say(
        f"how far this can be trusted: {CATALOG_TRUST}; with a few labels, `bertlens sweep --data FILE ... "
        "--protocols probe,label_free` says how far it holds on your task"
    )
    out = args.out
    say(f"wrote {out / 'report.md'}, {out / 'results.json'} and {out / 'recipe.json'}")
    say(f"reproduce: bertlens embed FILE --recipe {out / 'recipe.json'}")
