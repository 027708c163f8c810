"""`bertlens domain`: measure how far your text is from what the model was trained on, and say whether to adapt."""

from __future__ import annotations

import argparse
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import print_table, progress_bar, say
from bertlens.cli.options import add_encoder_options, add_run_options
from bertlens.cli.sources import add_data_dir_option, add_texts_options, file_texts
from bertlens.errors import BertlensError
from bertlens.tasks.catalog import data_dir


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "domain",
        help=COMMANDS["domain"],
        description="Tokenizer fit and the model's own masked-LM surprise on your text vs a reference corpus, "
        "with intervals and a verdict (adapt with `bertlens pretrain` or not).",
    )
    add_texts_options(parser, "your texts", required=True)
    parser.add_argument(
        "--reference",
        type=Path,
        help="a reference corpus file (default: UD EWT training sentences, "
        "general English web text, from $BERTLENS_DATA)",
    )
    add_data_dir_option(parser)
    parser.add_argument("--samples", type=int, default=500, help="texts per corpus for the masked-LM loss (seeded)")
    add_encoder_options(parser, model_default="default")
    add_run_options(parser, Path("out/domain"))
    parser.set_defaults(run=run)


def _reference(args: argparse.Namespace) -> tuple[list[str], str]:
    from bertlens.experiments.domain import default_reference

    if args.reference:
        return file_texts(args.reference, None), str(args.reference)
    return default_reference(data_dir(args.data_dir))


def run(args: argparse.Namespace) -> None:
    from bertlens.encoding.encoder import Encoder
    from bertlens.experiments.domain import measure_domain
    from bertlens.reports.domain import fit_rows, verdict, write_outputs

    if args.samples < 10:
        raise BertlensError("--samples must be at least 10")
    texts = file_texts(args.texts, args.column)
    if len(texts) < 2:
        raise BertlensError(f"{args.texts}: need at least 2 non-empty texts, found {len(texts)}")
    reference, name = _reference(args)
    encoder = Encoder(
        args.model, max_length=args.max_length or 128, trust_remote_code=args.trust_remote_code, device=args.device
    )
    with progress_bar("domain", unit="steps", enabled=not args.quiet) as update:
        result = measure_domain(encoder, texts, reference, name, samples=args.samples, seed=args.seed, progress=update)
    paths = write_outputs(result, args.out, str(args.texts))
    header, rows = fit_rows(result)
    print_table(f"{result.model}: your text vs {name}", header, rows)
    for note in result.notes:
        say(f"note: {note}")
    say(verdict(result, str(args.texts)))
    say(f"wrote {paths['report']} and {paths['results']}")
