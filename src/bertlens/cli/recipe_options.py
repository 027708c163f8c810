"""Options shared by commands that build a Recipe (--model, --layers, --pooler, ...)."""

from __future__ import annotations

import argparse

from bertlens.models import resolve_model
from bertlens.representation.mixers import MIXERS, parse_layers
from bertlens.representation.poolers import POOLERS
from bertlens.representation.recipe import PRECISIONS, Recipe


def add_recipe_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("representation (ignored where --recipe gives them)")
    group.add_argument("--recipe", help="a recipe JSON (e.g. recommended by `bertlens sweep`); flags below override it")
    group.add_argument("--model", help="'default' (all-MiniLM-L6-v2), a local model directory or a hub id")
    group.add_argument("--layers", help="'-1', '-4,-3,-2,-1', '-4:' (slice), '1:7' or 'all'; 0 is the embedding output")
    group.add_argument("--mixer", help=f"how layers combine: {', '.join(MIXERS)}")
    group.add_argument("--pooler", help=f"how tokens combine: {', '.join(POOLERS)}")
    group.add_argument("--exclude-special", action="store_true", default=None, help="pool without [CLS]/[SEP]")
    group.add_argument("--normalize", action="store_true", default=None, help="L2-normalise the vectors")
    group.add_argument("--max-length", type=int, help="truncate texts to this many tokens (default: the model's limit)")
    group.add_argument("--long-text", help="texts over the limit: head (default truncation), tail, head_tail[:HEAD], "
                       "windows[:STRIDE][:mean|max|first|weighted]")
    group.add_argument("--postprocess", help="a fitted post-processor (.safetensors from `bertlens postprocess`)")
    group.add_argument("--precision", choices=PRECISIONS, help="fp32 (exact) or bf16 (fast)")
    group.add_argument("--trust-remote-code", action="store_true", help="allow model code from the hub (off by default)")


def recipe_from_args(args: argparse.Namespace) -> Recipe:
    """--recipe file first (if any), then every flag the user set on top of it."""
    recipe = Recipe.load(args.recipe) if args.recipe else Recipe()
    changes: dict = {}
    if args.model:
        changes["model"] = args.model
    if args.layers:
        num_layers = resolve_model(changes.get("model", recipe.model)).num_layers
        changes["layers"] = parse_layers(args.layers, num_layers)
        if args.mixer is None and len(changes["layers"]) > 1 and recipe.mixer == "single":
            changes["mixer"] = "mean"
    for flag in ("mixer", "pooler", "max_length", "precision", "normalize", "postprocess", "long_text"):
        if getattr(args, flag) is not None:
            changes[flag] = getattr(args, flag)
    if args.exclude_special:
        changes["include_special"] = False
    return recipe.replace(**changes) if changes else recipe
