"""`bertlens serve`: the chosen recipe over HTTP (OpenAI-compatible /v1/embeddings, TEI-style /embed)."""

from __future__ import annotations

import argparse
import os
import socket

from bertlens.api.recipe_options import RECIPE_FIELDS
from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import say
from bertlens.cli.options import add_recipe_options, recipe_from_args
from bertlens.errors import BertlensError
from bertlens.representation.choices import SERVED_BACKENDS
from bertlens.serving.config import LONG_TEXT_POLICIES, ServeLimits, ServeOptions

DEFAULTS = ServeLimits()
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve",
        help=COMMANDS["serve"],
        description="Serve a recipe: POST /v1/embeddings (OpenAI-compatible), POST /embed (TEI-style), GET /health, "
        "/info, /metrics (Prometheus). Requests from concurrent clients are batched by a token budget.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--api-key", help="require 'Authorization: Bearer KEY' (also read from $BERTLENS_API_KEY)")
    parser.add_argument(
        "--allow-no-key",
        action="store_true",
        help="serve on an address other than this machine's without --api-key (refused otherwise)",
    )
    parser.add_argument("--name", default="bertlens", help="the model name reported in responses")
    parser.add_argument(
        "--backend", choices=SERVED_BACKENDS, default="torch", help="onnx: --model is a `bertlens export` directory"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="batches encoded at once, each on its own thread, the cores split between them (default 1: lowest "
        "latency for a lone client; 2 gave more throughput under many concurrent clients, see docs/results.md)",
    )
    parser.add_argument("--max-batch-tokens", type=int, default=DEFAULTS.max_batch_tokens, help="tokens per batch")
    parser.add_argument("--max-wait-ms", type=float, default=DEFAULTS.max_wait_ms, help="longest wait to fill a batch")
    parser.add_argument("--max-inputs", type=int, default=DEFAULTS.max_inputs, help="texts per request")
    parser.add_argument("--max-chars", type=int, default=DEFAULTS.max_chars, help="characters per text")
    parser.add_argument("--max-body-bytes", type=int, default=DEFAULTS.max_body_bytes, help="request body size")
    parser.add_argument("--max-queue", type=int, default=DEFAULTS.max_queue, help="requests waiting before 503")
    parser.add_argument(
        "--max-token-values",
        type=int,
        default=DEFAULTS.max_token_values,
        help="/embed_all: floats in one response, tokens x width (default 4,000,000: about 40 MB of JSON); over, 413",
    )
    parser.add_argument(
        "--max-client-requests",
        type=int,
        default=DEFAULTS.max_client_requests,
        help="requests one client address may have in flight before 429 (default 0: no limit)",
    )
    parser.add_argument(
        "--long-text-policy",
        choices=LONG_TEXT_POLICIES,
        default=DEFAULTS.long_text,
        help="texts over the model's limit: truncate (counted in /metrics) or refuse (413); a recipe with "
        "--long-text windows embeds them whole",
    )
    parser.add_argument(
        "--max-dimension-loss",
        type=float,
        default=0.01,
        help="answer a request's shorter 'dimensions' only where the recipe's measured loss at that width (written "
        "by `bertlens sweep`) is at most this (default 0.01: one point of Spearman); others get 422 naming the loss",
    )
    parser.add_argument(
        "--any-dimensions",
        action="store_true",
        help="answer any 'dimensions', measured or not (cut and renormalised, as TEI does)",
    )
    add_recipe_options(
        parser,
        several="repeat it to serve several recipes, each named by its file's stem and chosen by a request's "
        "'model' (GET /v1/models lists them); recipes of the same model share its weights",
    )
    parser.set_defaults(run=run, on_interrupt="stopped")


def _options(args: argparse.Namespace) -> ServeOptions:
    if not 0 < args.port < 65536:
        raise BertlensError("--port must be between 1 and 65535")
    limits = ServeLimits(
        args.max_batch_tokens,
        args.max_wait_ms,
        args.max_inputs,
        args.max_chars,
        args.max_body_bytes,
        args.max_queue,
        args.long_text_policy,
        args.max_client_requests,
        args.max_token_values,
    )
    api_key = args.api_key if args.api_key is not None else os.environ.get("BERTLENS_API_KEY")
    if api_key is not None and not api_key.strip():
        where = "--api-key" if args.api_key is not None else "$BERTLENS_API_KEY"
        raise BertlensError(
            f"{where} is empty (an unset shell variable?); give a key, or leave it out to serve without one"
        )
    if args.host not in LOCAL_HOSTS and api_key is None and not args.allow_no_key:
        raise BertlensError(
            f"serving on {args.host} without --api-key lets anyone who can reach it use it; give --api-key, "
            "or pass --allow-no-key"
        )
    return ServeOptions(limits, args.workers, api_key, args.name, args.max_dimension_loss, args.any_dimensions)


def _check_port(host: str, port: int) -> None:
    """The address is free to listen on: said in one line before the model loads, not by uvicorn after."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise BertlensError(f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port") from None


def run(args: argparse.Namespace) -> None:
    from bertlens.serving.app import create_app, load_encoder, route_banner, run_server, threads_per_worker

    options = _options(args)
    _check_port(args.host, args.port)
    # Requests are a few texts each: the tokenizer's thread pool only adds threads that fight the model for the
    # cores. Under load it held the event loop 1.5 ms per request, 0.09 ms without it (docs/results.md).
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.recipe and len(args.recipe) > 1:
        _run_several(args, options)
        return
    args.recipe = args.recipe[0] if args.recipe else None
    if args.backend == "torch" and args.precision is None and args.recipe is None:
        args.precision = "auto"
    recipe = recipe_from_args(args) if args.backend == "torch" else None
    embedder = load_encoder(
        args.backend,
        recipe=recipe,
        model_dir=args.model,
        workers=args.workers,
        trust_remote_code=args.trust_remote_code,
        device=args.device,
    )
    if args.host not in LOCAL_HOSTS and options.api_key is None:
        say(f"warning: serving on {args.host} without --api-key (--allow-no-key): anyone who can reach it can use it")
    app = create_app(embedder, options)
    threads = threads_per_worker(args.workers)
    say(
        f"serving {embedder.recipe.model} ({embedder.dim} dims, {embedder.recipe.precision}) on http://{args.host}:"
        f"{args.port} with {args.workers} worker(s) x {threads} thread(s) ({route_banner()})"
    )
    run_server(app, args.host, args.port)


def _run_several(args: argparse.Namespace, options) -> None:
    """Several --recipe files on one server: each its own name (the file's stem), workers and batcher."""
    from pathlib import Path

    from bertlens.representation.recipe import Recipe
    from bertlens.serving.app import create_app, load_recipes, run_server

    if args.backend != "torch":
        raise BertlensError("several --recipe files need the PyTorch backend (an ONNX export is one recipe)")
    flags = [f for f in RECIPE_FIELDS if getattr(args, f) not in (None, False)]
    if flags:
        raise BertlensError(
            f"--{flags[0].replace('_', '-')} would change every recipe; with several --recipe files put each "
            "setting in its file"
        )
    names = [Path(path).stem for path in args.recipe]
    if len(set(names)) < len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise BertlensError(f"two --recipe files are named '{twice}': a recipe is served by its file's stem")
    recipes = {name: Recipe.load(path) for name, path in zip(names, args.recipe)}
    embedders = load_recipes(
        recipes, workers=args.workers, trust_remote_code=args.trust_remote_code, device=args.device
    )
    app = create_app(embedders, options)
    shared = len({id(e.encoder) for e in embedders.values()})
    say(
        f"serving {', '.join(f'{n} ({e.dim} dims)' for n, e in embedders.items())} on {len(embedders)} recipes, "
        f"{shared} model(s) loaded, on http://{args.host}:{args.port}; a request's 'model' chooses (GET /v1/models)"
    )
    run_server(app, args.host, args.port)
