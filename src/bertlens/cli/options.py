"""Option groups shared by commands, declared once: encoder, recipe, output and training options."""

from __future__ import annotations

import argparse
from pathlib import Path

from bertlens.api.recipe_options import recipe_of
from bertlens.representation.choices import MIXERS, POOLER_NAMES, PRECISIONS
from bertlens.representation.recipe import Recipe
from bertlens.training.config import TrainConfig


def add_encoder_options(parser: argparse.ArgumentParser, model_default: str | None = None) -> argparse._ArgumentGroup:
    """--model --max-length --precision --trust-remote-code: what every command that encodes needs."""
    group = parser.add_argument_group("model")
    group.add_argument(
        "--model", default=model_default, help="'default' (all-MiniLM-L6-v2), a local model directory or a hub id"
    )
    group.add_argument("--max-length", type=int, help="truncate texts to this many tokens (default: the model's limit)")
    group.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="fp32 (exact), bf16 (fast only where the CPU has native bf16) or auto (bf16 there, fp32 elsewhere)",
    )
    group.add_argument(
        "--trust-remote-code", action="store_true", help="allow model code from the hub (off by default)"
    )
    group.add_argument(
        "--device",
        default="auto",
        help="where the model runs: auto (the first CUDA GPU when torch sees one, else the CPU), cpu, cuda or cuda:N; "
        "on a GPU, batches are sized to its free memory",
    )
    return group


def add_recipe_options(parser: argparse.ArgumentParser, several: str | None = None) -> None:
    """The encoder options plus every Recipe field (--recipe FILE, then flags on top of it); with `several` (what
    repeating it does), --recipe may be given more than once and arrives as a list."""
    group = add_encoder_options(parser)
    help_text = "a recipe JSON (e.g. recommended by `bertlens sweep`); flags override it"
    if several:
        group.add_argument("--recipe", action="append", help=f"{help_text}; {several}")
    else:
        group.add_argument("--recipe", help=help_text)
    group.add_argument("--layers", help="'-1', '-4,-3,-2,-1', '-4:' (slice), '1:7' or 'all'; 0 is the embedding output")
    group.add_argument("--mixer", help=f"how layers combine: {', '.join(MIXERS)}")
    group.add_argument("--pooler", help=f"how tokens combine: {', '.join(POOLER_NAMES)}")
    group.add_argument("--exclude-special", action="store_true", default=None, help="pool without [CLS]/[SEP]")
    group.add_argument("--normalize", action="store_true", default=None, help="L2-normalise the vectors")
    group.add_argument(
        "--long-text",
        help="texts over the limit: head (default truncation), tail, head_tail[:HEAD], "
        "windows[:STRIDE][:mean|max|first|weighted]",
    )
    group.add_argument("--postprocess", help="a fitted post-processor (.safetensors from `bertlens postprocess`)")
    group.add_argument("--query-prompt", help="retrieval: text put before every query, e.g. 'query: ' (E5)")
    group.add_argument("--document-prompt", help="retrieval: text put before every document, e.g. 'passage: ' (E5)")


def recipe_from_args(args: argparse.Namespace) -> Recipe:
    """--recipe file first (if any), then every flag the user set on top of it (api/recipe_options.py: the same
    function a command defined once uses)."""
    return recipe_of(args)


def add_run_options(parser: argparse.ArgumentParser, out: Path | None, out_help: str = "output directory") -> None:
    """--seed --out --quiet (--out is required when it has no default)."""
    parser.add_argument("--seed", type=int, default=0, help="seed for sampling, splits, initialisation and data order")
    parser.add_argument("--out", type=Path, default=out, required=out is None, help=out_help)
    parser.set_defaults(out_is_dir=True)  # checked before any work (cli/main.py: check_arguments)
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def add_training_options(parser: argparse.ArgumentParser, defaults: TrainConfig = TrainConfig()) -> None:
    group = parser.add_argument_group("training")
    group.add_argument(
        "--epochs", type=int, default=defaults.epochs, help="epochs (more for small sets: see --min-steps)"
    )
    group.add_argument("--min-steps", type=int, default=defaults.min_steps, help="at least this many optimiser steps")
    group.add_argument("--lr", type=float, default=defaults.lr, help="encoder learning rate (AdamW)")
    group.add_argument(
        "--head-lr", type=float, default=defaults.head_lr, help="learning rate of the head and ScalarMix"
    )
    group.add_argument("--batch-size", type=int, default=defaults.batch_size)
    group.add_argument("--warmup", type=float, default=defaults.warmup, help="fraction of steps with linear warmup")
    group.add_argument("--weight-decay", type=float, default=defaults.weight_decay)
    group.add_argument(
        "--patience", type=int, default=defaults.patience, help="epochs without dev improvement before stopping"
    )
    group.add_argument(
        "--checkpoint-every", type=int, default=defaults.checkpoint_every, help="steps between checkpoints"
    )
    group.add_argument(
        "--train-precision",
        choices=PRECISIONS,
        default=defaults.precision,
        help="fp32, bf16 autocast for forward passes (fast only where the CPU has native bf16; weights stay fp32), "
        "or auto (bf16 there, fp32 elsewhere)",
    )
    group.add_argument("--restart", action="store_true", help="discard an unfinished run in --out and start over")


def add_trained_model_options(parser: argparse.ArgumentParser, cache_help: str) -> None:
    """--cache-dir --trust-remote-code --seed --out --quiet: what every command that writes a trained model takes."""
    parser.add_argument("--cache-dir", type=Path, help=f"{cache_help} (default $BERTLENS_CACHE or ~/.cache/bertlens)")
    parser.add_argument(
        "--trust-remote-code", action="store_true", help="allow model code from the hub (off by default)"
    )
    add_run_options(parser, None, "model directory to write (an interrupted run resumes here)")


def training_config(args: argparse.Namespace, seed: int) -> TrainConfig:
    """The loop's settings from the training flags (api/training_options.py: the same checks a command defined once
    runs)."""
    from bertlens.api.training_options import training_config as from_options

    return from_options(args, seed)
