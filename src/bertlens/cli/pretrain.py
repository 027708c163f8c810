"""`bertlens pretrain`: continued masked-LM pre-training (DAPT on corpus files, TAPT on a task's own texts)."""

from __future__ import annotations

import argparse
import shutil
from dataclasses import replace
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import progress_bar, say
from bertlens.cli.options import add_trained_model_options, add_training_options, training_config
from bertlens.cli.sources import add_data_dir_option, add_texts_options, training_texts
from bertlens.errors import BertlensError
from bertlens.io.tables import check_file, is_blank, iter_texts, parse_column
from bertlens.tasks.catalog import CATALOG, data_dir, get_task
from bertlens.training.config import MASK_UNITS, PRETRAIN_DEFAULTS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "pretrain",
        help=COMMANDS["pretrain"],
        description="Continue masked-LM training of a model on in-domain text (DAPT, --texts) or on a task's own "
        "texts (TAPT, --task); writes a model directory every command accepts, with the masked-LM head kept.",
    )
    start = parser.add_mutually_exclusive_group(required=True)
    start.add_argument("--from", dest="model", help="the model to continue: 'default', a directory, a hub id")
    start.add_argument(
        "--config", help="train from scratch: a size (tiny, mini, small, medium) or a BertConfig JSON file"
    )
    parser.add_argument("--tokenizer", type=Path, help="with --config: a directory holding the tokenizer to use")
    source = parser.add_mutually_exclusive_group(required=True)
    add_texts_options(parser, "corpus files (a .txt file holds a document a line)", target=source, many=True)
    source.add_argument("--task", help=f"a catalog task's training texts (TAPT): {', '.join(CATALOG)}")
    add_data_dir_option(parser)
    parser.add_argument("--max-length", type=int, default=128, help="tokens per packed row (default 128)")
    parser.add_argument("--mask-unit", choices=MASK_UNITS, default="word", help="whole-word masking (default) or token")
    parser.add_argument("--heldout", type=float, default=0.02, help="share of rows held out for the held-out loss")
    parser.add_argument("--max-tokens", type=int, help="use only the first N tokens of the corpus (a token budget)")
    add_training_options(parser, PRETRAIN_DEFAULTS)
    add_trained_model_options(parser, "token-stream cache")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from bertlens.experiments.pretrain import PretrainOptions, run_pretrain
    from bertlens.io.cache import content_key, file_sha256
    from bertlens.io.run_context import RunContext
    from bertlens.tasks.loaders import load_catalog_task
    from bertlens.training import distributed
    from bertlens.training.students import initialise_from_scratch

    config = training_config(args, args.seed)
    if not 0 < args.heldout < 0.5:
        raise BertlensError("--heldout must be a share between 0 and 0.5, e.g. 0.02")
    if args.texts:
        for path in args.texts:
            check_file(path)
        column = parse_column(args.column) if args.column else None
        texts = (t for path in args.texts for t in iter_texts(path, column) if not is_blank(t))  # streamed
        source = ", ".join(str(p) for p in args.texts)
        key = content_key([args.column, [file_sha256(p) for p in args.texts]])
    else:
        texts = training_texts(load_catalog_task(get_task(args.task), data_dir(args.data_dir)))
        source, key = f"task {args.task} (training texts)", content_key(["task", args.task], texts)
    world = distributed.setup()  # under torchrun: one process per rank, rank 0 writes and prints
    model = args.model
    if args.config:
        if args.tokenizer is None:
            raise BertlensError("--config trains from scratch and needs --tokenizer DIR (e.g. a model directory)")
        if world.writer:
            initialise_from_scratch(args.config, args.tokenizer, args.out / ".init", args.seed, args.max_length)
        distributed.barrier(world)
        model = str(args.out / ".init")
    with progress_bar("pretrain", unit="steps", enabled=not args.quiet and world.writer) as update:
        run_context = RunContext(args.out, args.cache_dir, config.seed, update, restart=args.restart)
        options = PretrainOptions(args.max_length, args.mask_unit, args.heldout, args.max_tokens)
        outcome = run_pretrain(
            model,
            texts,
            source,
            key,
            replace(run_context, trust_remote_code=args.trust_remote_code),
            config,
            options,
        )
    if not world.writer:
        return
    say(
        f"pretrain: {outcome.tokens:,} tokens from {source}, {outcome.result.steps} steps; held-out masked-LM loss "
        f"{outcome.base_heldout:.3f} (base) -> {outcome.final_heldout:.3f}; {outcome.head}"
    )
    if args.config:
        shutil.rmtree(args.out / ".init", ignore_errors=True)  # the random starting point, no longer needed
    say(f"saved {args.out} (use --model {args.out}, or --from {args.out} to continue)")
