"""`bertlens sweep --task NAME | --data FILE ...`: score every representation choice, recommend one."""

from __future__ import annotations

import argparse
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import STDERR, print_table, progress_bar, say
from bertlens.cli.options import add_encoder_options, add_run_options
from bertlens.cli.sources import add_task_options, load_task
from bertlens.errors import BertlensError
from bertlens.representation.choices import DEFAULT_POOLERS, attentions_for, check_pooler, parse_layers
from bertlens.representation.recipe import Recipe


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


def run(args: argparse.Namespace) -> None:
    from bertlens.experiments.sweep import SweepConfig, check_config, run_sweep
    from bertlens.io.cache import default_cache_dir
    from bertlens.probing.candidates import parse_prompt_set
    from bertlens.reports.sweep import leaderboard, recommended_score, write_outputs
    from bertlens.representation.postprocess import parse_steps

    poolers = tuple(check_pooler(p.strip()) for p in args.poolers.split(",") if p.strip())
    if args.postprocess_steps:
        parse_steps(args.postprocess_steps)
    prompt_sets = tuple(parse_prompt_set(p) for p in args.prompts or ())
    if args.texts is not None:
        return _run_texts(args, poolers)
    task = load_task(args)
    check_config(
        SweepConfig(poolers, prompt_sets=prompt_sets, long_documents=args.long_documents), task.kind, task.name
    )
    base, encoder = _base_and_encoder(args, poolers)
    layers = parse_layers(args.layers, encoder.num_layers) if args.layers else None
    config = SweepConfig(
        poolers=poolers,
        layers=layers,
        seed=args.seed,
        resamples=args.resamples,
        postprocess=args.postprocess_steps,
        bank_dtype=args.bank_dtype,
        protocols=tuple(p.strip() for p in args.protocols.split(",") if p.strip()) if args.protocols else None,
        prompt_sets=prompt_sets,
        long_documents=args.long_documents,
    )
    if task.collection is not None:
        say(f"{task.name}: {task.collection.describe()}" + "".join(f"; {note}" for note in task.notes))
    else:
        if task.dropped:
            say(f"dropped {task.dropped} invalid rows (--drop-invalid)")
        for note in task.notes:  # what the loader did to the user's splits (overlap dropped, unseen labels)
            say(f"note: {note}")
    with progress_bar(f"sweep {task.name}", enabled=not args.quiet) as update:
        result = run_sweep(
            task,
            encoder,
            base.replace(max_length=encoder.max_length),
            default_cache_dir(args.cache_dir),
            config,
            progress=update,
        )
    paths = write_outputs(result, args.out)
    for name, protocol in result.protocols.items():
        print_table(
            f"{task.name}: {name} ({protocol.metric}, {protocol.split}, 95% CI)",
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
        f"wrote {paths['report']}, {paths['results']} and {paths['recipe']} "
        f"(reproduce: bertlens embed FILE --recipe {paths['recipe']})"
    )


def print_trust(trust) -> None:
    """How far the label-free pick holds on this labelled task, and how many labels settle the choice."""
    from bertlens.reports.sweep import trust_lines

    for line in trust_lines(trust):
        say(line)


def _run_texts(args: argparse.Namespace, poolers: tuple[str, ...]) -> None:
    """sweep --texts FILE: no labels; the label-free protocol chooses."""

    from bertlens.cli.sources import unlabelled_texts
    from bertlens.experiments.sweep import SweepConfig, run_texts_sweep
    from bertlens.io.cache import default_cache_dir
    from bertlens.probing.label_free import CATALOG_TRUST
    from bertlens.reports.sweep import leaderboard, write_outputs

    if args.protocols or args.long_documents or args.prompts or args.postprocess_steps:
        flag = next(f for f in ("protocols", "long_documents", "prompts", "postprocess_steps") if getattr(args, f))
        raise BertlensError(
            f"--texts takes texts alone; --{flag.replace('_', '-')} belongs to --data (a labelled file)"
        )
    texts, skipped = unlabelled_texts(args)
    if skipped:
        say(skipped)
    if args.max_examples is not None and args.max_examples < 8:  # before the model loads; run_texts_sweep samples
        raise BertlensError("--max-examples must be at least 8 for --texts")
    base, encoder = _base_and_encoder(args, poolers)
    layers = parse_layers(args.layers, encoder.num_layers) if args.layers else None
    config = SweepConfig(
        poolers=poolers, layers=layers, seed=args.seed, bank_dtype=args.bank_dtype, max_texts=args.max_examples
    )
    name = args.texts.stem
    with progress_bar(f"sweep {name} (texts alone)", enabled=not args.quiet) as update:
        result = run_texts_sweep(
            texts,
            name,
            encoder,
            base.replace(max_length=encoder.max_length),
            default_cache_dir(args.cache_dir),
            config,
            update,
        )
    paths = write_outputs(result, args.out)
    protocol = result.main
    print_table(
        f"{name}: label-free (combined rank score, {protocol.split}, 95% range)",
        ("#", "candidate", "score [95% range]", ""),
        leaderboard(protocol),
    )
    swept = (
        min(len(texts), args.max_examples) if args.max_examples is not None else len(texts)
    )  # run_texts_sweep samples
    STDERR.print(f"recommended [bold]{result.recommended.name}[/] from {swept} texts, no labels: {result.basis}")
    say(
        f"how far this can be trusted: {CATALOG_TRUST}; with a few labels, `bertlens sweep --data FILE ... "
        "--protocols probe,label_free` says how far it holds on your task"
    )
    say(
        f"wrote {paths['report']}, {paths['results']} and {paths['recipe']} (bertlens embed FILE --recipe {paths['recipe']})"
    )


def _base_and_encoder(args: argparse.Namespace, poolers: tuple[str, ...]):
    """What every candidate shares (the sweep chooses layers, mixer and pooler; the user fixes the rest), and the
    encoder built with what the poolers need."""
    from bertlens.encoding.encoder import Encoder

    base = Recipe(
        model=args.model or "default",
        max_length=args.max_length,
        precision=args.precision or "fp32",
        include_special=not args.exclude_special,
        long_text=args.long_text,
    )
    encoder = Encoder(
        base.model,
        max_length=base.max_length,
        precision=base.precision,
        attentions=attentions_for(poolers),
        trust_remote_code=args.trust_remote_code,
        device=args.device,
    )
    return base, encoder
