"""`bertlens serve`: the chosen recipe over HTTP (OpenAI-compatible /v1/embeddings, TEI-style /embed)."""

from __future__ import annotations

import argparse

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import say
from bertlens.cli.options import add_recipe_options, recipe_from_args
from bertlens.errors import BertlensError
from bertlens.serving.app import LONG_TEXT_POLICIES, ServeLimits

DEFAULTS = ServeLimits()


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
    parser.add_argument("--name", default="bertlens", help="the model name reported in responses")
    parser.add_argument(
        "--backend", choices=("torch", "onnx"), default="torch", help="onnx: --model is a `bertlens export` directory"
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
    add_recipe_options(parser)
    parser.set_defaults(run=run)


def _limits(args: argparse.Namespace) -> ServeLimits:
    for flag in ("max_batch_tokens", "max_inputs", "max_chars", "max_body_bytes", "max_queue"):
        if getattr(args, flag) < 1:
            raise BertlensError(f"--{flag.replace('_', '-')} must be at least 1")
    if args.max_client_requests < 0:
        raise BertlensError("--max-client-requests must be >= 0 (0: no limit)")
    if args.workers < 1:
        raise BertlensError("--workers must be at least 1")
    if args.max_wait_ms < 0:
        raise BertlensError("--max-wait-ms must be >= 0")
    if not 0 < args.port < 65536:
        raise BertlensError("--port must be between 1 and 65535")
    return ServeLimits(
        args.max_batch_tokens,
        args.max_wait_ms,
        args.max_inputs,
        args.max_chars,
        args.max_body_bytes,
        args.max_queue,
        args.long_text_policy,
        args.max_client_requests,
    )


def run(args: argparse.Namespace) -> None:
    import os

    import torch
    import uvicorn

    from bertlens.serving.app import create_app

    limits = _limits(args)
    # Requests are a few texts each: the tokenizer's thread pool only adds threads that fight the model for the
    # cores. Under load it held the event loop 1.5 ms per request, 0.09 ms without it (docs/results.md).
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    cores = torch.get_num_threads()
    workers = args.workers
    threads = max(1, cores // workers)  # per worker: the workers share the cores, not oversubscribe them
    if args.backend == "onnx":
        from bertlens.embedding.onnx_backend import OnnxEmbedder

        if not args.model:
            raise BertlensError("--backend onnx needs --model DIR, a directory from `bertlens export --format onnx`")
        embedder = OnnxEmbedder(args.model, threads=threads)
    else:
        from bertlens.embedding.embedder import Embedder

        if args.precision is None and args.recipe is None:
            args.precision = "auto"
        torch.set_num_threads(threads)
        embedder = Embedder(recipe_from_args(args), trust_remote_code=args.trust_remote_code)
    encoders = None
    if workers > 1:
        encoders = [embedder.encode] + [embedder.for_thread().encode for _ in range(workers - 1)]
    api_key = args.api_key or os.environ.get("BERTLENS_API_KEY")
    if args.host not in ("127.0.0.1", "localhost", "::1") and api_key is None:
        say(f"warning: serving on {args.host} without --api-key: anyone who can reach it can use it")
    app = create_app(embedder, limits, encoders=encoders, api_key=api_key, name=args.name)
    say(
        f"serving {embedder.recipe.model} ({embedder.dim} dims, {embedder.recipe.precision}) on http://{args.host}:"
        f"{args.port} with {workers} worker(s) x {threads} thread(s) (POST /v1/embeddings, POST /embed, GET /health /info "
        "/metrics)"
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=30)
