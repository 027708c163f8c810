"""`bertlens geometry`: anisotropy diagnostics per layer and pooler (cosines, self-similarity, PCs, uniformity)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import progress_bar, say
from bertlens.cli.options import add_encoder_options, add_run_options
from bertlens.cli.sources import add_text_source, load_texts
from bertlens.representation.choices import attentions_for, check_pooler


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "geometry",
        help=COMMANDS["geometry"],
        description="Measure how anisotropic each layer's vectors are (Ethayarajh 2019; "
        "Wang & Isola 2020) on your texts.",
    )
    add_text_source(parser)
    add_encoder_options(parser, model_default="default")
    parser.add_argument("--poolers", default="cls,mean,max", help="sentence poolers to diagnose (comma list)")
    add_run_options(parser, Path("out/geometry"))
    parser.set_defaults(run=run, max_texts=2000)


def run(args: argparse.Namespace) -> None:
    from bertlens.encoding.encoder import Encoder
    from bertlens.experiments.geometry import collect, layer_diagnostics, positive_pairs
    from bertlens.reports.geometry import markdown_table, write_outputs

    poolers = tuple(check_pooler(p.strip()) for p in args.poolers.split(",") if p.strip())
    texts, source, task = load_texts(args, args.seed)
    encoder = Encoder(
        args.model,
        max_length=args.max_length,
        precision=args.precision or "fp32",
        attentions=attentions_for(poolers),
        trust_remote_code=args.trust_remote_code,
        device=args.device,
    )
    with progress_bar(f"geometry ({len(texts)} texts from {source})", enabled=not args.quiet) as update:
        collected = collect(encoder, texts, poolers, seed=args.seed, progress=update)
    rows = layer_diagnostics(collected, seed=args.seed, positives=positive_pairs(task, texts))
    paths = write_outputs(rows, args.out, model=encoder.ref.name, source=source, texts=len(texts), seed=args.seed)
    say("\n".join(markdown_table(rows)))
    say(f"wrote {paths['report']}, {paths['results']} and {paths['plot']}")
