"""`bertlens contrastive`: SimCSE on raw sentences, or supervised contrastive training on positive pairs."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

import numpy as np

from bertlens.cli.progress import STDERR, progress_bar
from bertlens.cli.recipe_options import add_recipe_options, recipe_from_args
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.io.tables import TableSpec, is_blank, iter_records, parse_column, read_texts
from bertlens.tasks.catalog import data_dir, get_task
from bertlens.tasks.loaders import load_catalog_task
from bertlens.training.contrastive import ContrastiveConfig, train_contrastive
from bertlens.training.saved_model import save_finetuned


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("contrastive", help="SimCSE (unsupervised) or supervised contrastive fine-tuning",
                                   description="Contrastive fine-tuning for similarity; writes a model directory that "
                                   "every command accepts as --model.")
    parser.add_argument("--mode", choices=("simcse", "pairs"), default="simcse",
                        help="simcse: raw sentences, dropout as noise; pairs: (anchor, positive) pairs")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--texts", type=Path, help="simcse: sentences (.txt one a line, or CSV/TSV/JSONL with --column)")
    source.add_argument("--pairs", type=Path, help="pairs: a CSV/TSV/JSONL file with --text-col and --text-col2")
    source.add_argument("--task", help="a catalog task: its texts (simcse) or its pairs scored >= --min-score (pairs)")
    parser.add_argument("--column", help="--texts: the text column or field")
    parser.add_argument("--text-col", help="--pairs: anchor column (header name or 0-based index)")
    parser.add_argument("--text-col2", help="--pairs: positive column")
    parser.add_argument("--no-header", action="store_true", help="--pairs: the CSV/TSV has no header row")
    parser.add_argument("--min-score", type=float, default=4.0, help="--task with pairs: keep training pairs scored at least this")
    parser.add_argument("--data-dir", help="where catalog tasks live (default $BERTLENS_DATA or ../shared/data)")
    parser.add_argument("--max-texts", type=int, help="a seeded sample of at most N sentences or pairs")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--temperature", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="model directory to write")
    parser.add_argument("--quiet", action="store_true")
    add_recipe_options(parser)
    parser.set_defaults(run=run)


def _examples(args) -> tuple[list[str], list[str] | None, str]:
    if args.mode == "simcse":
        if args.pairs:
            raise BertlensError("--mode simcse takes --texts or --task; --pairs is for --mode pairs")
        if args.task:
            return load_catalog_task(get_task(args.task), data_dir(args.data_dir)).all_texts(), None, f"task {args.task}"
        texts = [t for t in read_texts(args.texts, parse_column(args.column) if args.column else None) if not is_blank(t)]
        return texts, None, str(args.texts)
    if args.texts:
        raise BertlensError("--mode pairs takes --pairs FILE or --task; --texts is for --mode simcse")
    if args.task:
        task = load_catalog_task(get_task(args.task), data_dir(args.data_dir))
        train = task.splits.get("train") or next(iter(task.splits.values()))
        if train.texts_b is None:
            raise BertlensError(f"task '{args.task}' has single texts; --mode pairs needs a pair task such as stsb")
        keep = train.targets >= args.min_score if task.kind == "similarity" else np.ones(len(train), dtype=bool)
        rows = np.flatnonzero(keep)
        return [train.texts_a[i] for i in rows], [train.texts_b[i] for i in rows], f"{args.task} train pairs >= {args.min_score}"
    if args.text_col is None or args.text_col2 is None:
        raise BertlensError("--pairs needs --text-col and --text-col2 (the anchor and positive columns)")
    spec = TableSpec(args.pairs, (parse_column(args.text_col), parse_column(args.text_col2)), header=not args.no_header)
    anchors, positives = [], []
    for line, (a, b) in iter_records(spec):
        if is_blank(a) or is_blank(b):
            raise BertlensError(f"{args.pairs}:{line}: empty text in a pair; remove the row")
        anchors.append(a)
        positives.append(b)
    return anchors, positives, str(args.pairs)


def run(args: argparse.Namespace) -> None:
    if args.epochs < 1 or args.batch_size < 2 or args.temperature <= 0 or args.lr <= 0:
        raise BertlensError("--epochs >= 1, --batch-size >= 2, and positive --temperature and --lr are required")
    anchors, positives, source = _examples(args)
    if args.max_texts and len(anchors) > args.max_texts:
        keep = np.sort(np.random.default_rng(args.seed).choice(len(anchors), args.max_texts, replace=False))
        anchors = [anchors[i] for i in keep]
        positives = None if positives is None else [positives[i] for i in keep]
    recipe = recipe_from_args(args)
    encoder = Encoder(recipe.model, max_length=recipe.max_length, trust_remote_code=args.trust_remote_code)
    recipe = recipe.replace(max_length=encoder.max_length, postprocess=None)
    config = ContrastiveConfig(lr=args.lr, batch_size=args.batch_size, epochs=args.epochs, temperature=args.temperature,
                               seed=args.seed)
    with progress_bar(f"{args.mode} on {len(anchors)} examples", unit="steps", enabled=not args.quiet) as update:
        result = train_contrastive(encoder, recipe, anchors, positives, config,
                                   on_step=lambda step, total, loss: update(step, total))
    save_finetuned(args.out, encoder, recipe, None, {
        "objective": "simcse" if positives is None else "multiple_negatives_ranking", "source": source,
        "examples": len(anchors), "config": asdict(config), "steps": result.steps, "first_loss": result.first_loss,
        "last_loss": result.last_loss, "seconds": round(result.seconds, 1), "base_model": encoder.ref.name,
        "base_fingerprint": encoder.ref.fingerprint})
    STDERR.print(f"{args.mode}: {len(anchors)} examples from {source}, {result.steps} steps, loss {result.first_loss:.3f} -> "
                 f"{result.last_loss:.3f}, {result.seconds:.0f} s; saved {args.out} (use --model {args.out})",
                 markup=False, soft_wrap=True)
