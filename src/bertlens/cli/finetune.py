"""`bertlens finetune`: train one strategy on a task and save the model as a Hugging Face directory."""

from __future__ import annotations

import argparse
import shutil
from dataclasses import asdict
from pathlib import Path

import torch

from bertlens.cli.finetune_options import add_training_options, training_config
from bertlens.cli.progress import STDERR, progress_bar
from bertlens.cli.recipe_options import add_recipe_options, recipe_from_args
from bertlens.cli.task_options import add_task_options, load_task
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.training.compare import resolve_sizes, task_splits, training_subset
from bertlens.training.heads import Head, HeadSpec
from bertlens.training.loop import Encoded, fine_tune, predict, score
from bertlens.training.saved_model import save_finetuned
from bertlens.training.strategies import parse_strategy


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("finetune", help="fine-tune with one strategy and save a model directory",
                                   description="Fine-tune encoder + head; the result works as --model for every command.")
    add_task_options(parser)
    add_recipe_options(parser)
    parser.add_argument("--strategy", default="full", help="full, partial:K, gradual, llrd[:DECAY], each with optional +reinit:K")
    parser.add_argument("--size", help="train on a seeded subset of this many examples (default: all)")
    parser.add_argument("--max-dev", type=int, help="at most this many dev examples (scored every epoch)")
    parser.add_argument("--seed", type=int, default=0)
    add_training_options(parser)
    parser.add_argument("--out", type=Path, required=True, help="model directory to write (an interrupted run resumes here)")
    parser.add_argument("--restart", action="store_true", help="discard an unfinished run in --out")
    parser.add_argument("--quiet", action="store_true")
    parser.set_defaults(run=run, max_examples=None)


def run(args: argparse.Namespace) -> None:
    task = load_task(args)
    recipe = recipe_from_args(args)
    encoder = Encoder(recipe.model, max_length=recipe.max_length, trust_remote_code=args.trust_remote_code)
    recipe = recipe.replace(max_length=encoder.max_length)
    strategy = parse_strategy(args.strategy, encoder.num_layers)
    if not strategy.fine_tunes:
        raise BertlensError("--strategy frozen trains no encoder; use `bertlens sweep` or `bertlens compare` for frozen probes")
    train, dev, test = task_splits(task, args.max_dev)
    if args.size:
        train = training_subset(train, resolve_sizes(args.size, len(train))[0], args.seed, task.kind)
    config = training_config(args, args.seed)
    checkpoint = args.out / "checkpoint"
    if args.restart:
        shutil.rmtree(checkpoint, ignore_errors=True)
    torch.manual_seed(args.seed)
    classes = int(max(train.targets.max(), dev.targets.max(), test.targets.max())) + 1 if task.kind != "similarity" else 0
    width = encoder.hidden_size * (len(recipe.layers) if recipe.mixer == "concat" else 1)
    head = Head(HeadSpec(task.kind, width, classes, float(train.targets.max()) if task.kind == "similarity" else 1.0))
    with progress_bar(f"finetune {task.name} ({strategy.name})", unit="steps", enabled=not args.quiet) as update:
        result = fine_tune(encoder, recipe, head, strategy, Encoded.of(encoder, train), Encoded.of(encoder, dev), task.kind,
                           config, checkpoint_dir=checkpoint, on_step=lambda step, total: update(step, total))
    test_score = score(predict(encoder, recipe, head, Encoded.of(encoder, test)), test.targets, task.kind)
    saved = save_finetuned(args.out, encoder, recipe, head, {
        "task": task.name, "strategy": strategy.name, "train_examples": len(train), "config": asdict(config),
        "dev_history": list(result.history), "best_epoch": result.best_epoch, "dev": result.best_dev,
        "test": test_score, "metric": task.metric, "steps": result.steps, "seconds": round(result.seconds, 1),
        "stopped_early": result.stopped_early, "base_model": encoder.ref.name, "base_fingerprint": encoder.ref.fingerprint})
    shutil.rmtree(checkpoint, ignore_errors=True)
    STDERR.print(f"{task.name} ({strategy.name}, {len(train)} examples): dev {task.metric} {result.best_dev:.4f} "
                 f"(epoch {result.best_epoch + 1}), test {test_score:.4f}, {result.seconds:.0f} s")
    STDERR.print(f"saved {args.out} (use --model {args.out}, or --recipe {saved.model}/recipe.json)", markup=False, soft_wrap=True)
