"""`bertlens postprocess`: fit whitening / all-but-the-top / centring on a corpus; save it into a recipe."""

from __future__ import annotations

import argparse

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import progress_bar, say
from bertlens.cli.options import add_recipe_options, add_run_options, recipe_from_args
from bertlens.cli.sources import add_text_source, load_texts

FILE = "postprocess.safetensors"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "postprocess",
        help=COMMANDS["postprocess"],
        description="Fit post-processing steps on the recipe's vectors of a corpus; writes "
        f"OUT/{FILE} and OUT/recipe.json (use it with `bertlens embed --recipe`).",
    )
    add_text_source(parser)
    parser.add_argument("--steps", default="whiten", help="comma list: center, whiten[:K], abtt[:D], normalize")
    add_run_options(parser, None, "directory for postprocess.safetensors and recipe.json")
    add_recipe_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from bertlens.embedding.embedder import Embedder
    from bertlens.representation.postprocess import PostProcessor, parse_steps

    steps = parse_steps(args.steps)
    recipe = recipe_from_args(args).replace(postprocess=None)
    texts, source, _ = load_texts(args, args.seed)
    embedder = Embedder(recipe, trust_remote_code=args.trust_remote_code, device=args.device)
    with progress_bar("postprocess", enabled=not args.quiet) as update:
        vectors = embedder.encode(texts, update)
    fitted = PostProcessor.fit(steps, vectors)
    args.out.mkdir(parents=True, exist_ok=True)
    fitted.save(args.out / FILE)
    recipe.replace(max_length=embedder.encoder.max_length, postprocess=FILE).save(args.out / "recipe.json")
    say(
        f"fitted {fitted.name} on {len(texts)} texts from {source} ({fitted.dim} -> {fitted.output_dim} dims); "
        f"wrote {args.out / FILE} and {args.out / 'recipe.json'}"
    )
