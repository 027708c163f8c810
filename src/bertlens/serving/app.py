"""`bertlens serve` as a library: `load_encoder` + `create_app` give a Python caller exactly what the CLI runs.

POST /v1/embeddings  OpenAI's request and response (input: a string or a list of strings; encoding_format
                     float, base64, int8 or ubinary; dimensions: a shorter width only where the recipe's measured loss at it is
                     within --max-dimension-loss, unless --any-dimensions; usage with token counts), so the
                     official `openai` client works unchanged
POST /embed          TEI-style: {"inputs": ..., "normalize": true, "truncate": false} -> [[...], ...]
Both take "input_type": "query" | "document": the recipe's query_prompt or document_prompt goes before each text.
POST /embed_all      TEI-style token output: every token's vector per input (the recipe's layers, before pooling)
GET  /health         liveness (no key);  GET /info: recipe, model fingerprint, limits, backend;  GET /metrics:
                     Prometheus (both behind the key when one is set)
Every refusal is a JSON error with the right status: 400 bad JSON, 401 key, 413 too large, 415 not JSON,
422 invalid input, 429 a client over its in-flight limit (when one is set), 503 queue full. Requests are
validated before they are queued (serving/service.py); the model runs on worker threads, off the event loop.

    encoder = load_encoder("torch", recipe=Recipe.load("recipe.json"), workers=2)
    app = create_app(encoder, ServeOptions(ServeLimits(max_inputs=64), workers=2))
    run_server(app, "127.0.0.1", 8000)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from bertlens.embedding.protocol import TextEncoder
from bertlens.errors import BertlensError
from bertlens.probing.truncation import truncate
from bertlens.representation.recipe import Recipe
from bertlens.serving.config import BACKENDS, ServeOptions
from bertlens.serving.metrics import CONTENT_TYPE, ServerMetrics
from bertlens.serving.requests import (
    ENCODINGS,
    ApiError,
    check_key,
    encoded,
    json_response,
    prompted,
    read_json,
    request_texts,
)
from bertlens.serving.service import Admission, EmbeddingService
from bertlens.version import __version__

LOG = logging.getLogger("bertlens.serve")


def threads_per_worker(workers: int) -> int:
    """The cores (torch's thread count) split evenly between encode workers, at least one each."""
    import torch

    return max(1, torch.get_num_threads() // workers)


def load_encoder(
    backend: str,
    *,
    recipe: Recipe | None = None,
    model_dir: str | os.PathLike | None = None,
    workers: int = 1,
    trust_remote_code: bool = False,
    device: str = "cpu",
) -> TextEncoder:
    """The encoder a server runs: `recipe` on PyTorch, or an ONNX export directory; the cores split between
    `workers` so concurrent batches share them instead of oversubscribing them."""
    import torch

    if backend not in BACKENDS:
        raise BertlensError(f"unknown backend '{backend}': valid: {', '.join(BACKENDS)}")
    threads = threads_per_worker(workers)
    if backend == "onnx":
        from bertlens.embedding.onnx_backend import OnnxEmbedder

        if not model_dir:
            raise BertlensError("--backend onnx needs --model DIR, a directory from `bertlens export --format onnx`")
        return OnnxEmbedder(model_dir, threads=threads)
    from bertlens.embedding.embedder import Embedder

    torch.set_num_threads(threads)
    return Embedder(recipe or Recipe(precision="auto"), trust_remote_code=trust_remote_code, device=device)


def load_recipes(
    recipes: Mapping[str, Recipe], *, workers: int = 1, trust_remote_code: bool = False, device: str = "cpu"
) -> dict[str, TextEncoder]:
    """One PyTorch encoder per recipe; recipes that run the same model the same way (model, max length, precision,
    attention maps) share one Encoder, so its weights are loaded once."""
    import torch

    from bertlens.embedding.embedder import Embedder

    torch.set_num_threads(threads_per_worker(workers))
    shared: dict[tuple, object] = {}
    out: dict[str, TextEncoder] = {}
    for name, recipe in recipes.items():
        key = (recipe.model, recipe.max_length, recipe.precision, recipe.needs_attentions)
        out[name] = Embedder(recipe, encoder=shared.get(key), trust_remote_code=trust_remote_code, device=device)
        shared.setdefault(key, out[name].encoder)
    return out


def _error(status: int, message: str, kind: str = "invalid_request_error", headers=None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status, headers=headers)


Chooser = Callable[[dict], EmbeddingService]  # a request's payload -> the recipe's service that answers it


def _chooser(services: dict[str, EmbeddingService]) -> Chooser:
    """One recipe: every request (its `model` echoed back, never checked). Several: the request's `model` names one."""
    only = next(iter(services.values())) if len(services) == 1 else None
    served = ", ".join(services)

    def pick(payload: dict) -> EmbeddingService:
        if only is not None:
            return only
        model = payload.get("model")
        if model is None:
            raise ApiError(422, f"'model' is required: this server runs {served}")
        if not isinstance(model, str) or model not in services:
            raise ApiError(404, f"model {model!r} is not served here; served: {served}", "model_not_found")
        return services[model]

    return pick


def _openai_route(pick: Chooser, limits) -> Callable[[Request], Awaitable[Response]]:
    async def work(request: Request) -> Response:
        payload = await read_json(request, limits)
        service = pick(payload)
        texts = prompted(payload, request_texts(payload, "input", service.limits), service.embedder.recipe)
        encoding = payload.get("encoding_format", "float")
        if encoding not in ENCODINGS:
            raise ApiError(422, f"'encoding_format' must be one of {', '.join(repr(e) for e in ENCODINGS)}")
        width = service.check_dimensions(payload.get("dimensions"))
        vectors, tokens = await service.embed(texts, service.refuses_long)
        if width is not None:
            vectors = truncate(vectors, width)  # first `width` dimensions, renormalised
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(encoded(vectors, encoding))]
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return json_response({"object": "list", "data": data, "model": service.options.name, "usage": usage})

    return work


def _tei_route(pick: Chooser, limits) -> Callable[[Request], Awaitable[Response]]:
    async def work(request: Request) -> Response:
        payload = await read_json(request, limits)
        service = pick(payload)
        texts = prompted(payload, request_texts(payload, "inputs", service.limits), service.embedder.recipe)
        normalize, truncate = payload.get("normalize", True), payload.get("truncate", False)
        if not isinstance(normalize, bool) or not isinstance(truncate, bool):
            raise ApiError(422, "'normalize' and 'truncate' must be true or false")
        refuse = service.refuses_long or (None if truncate else "send truncate: true")
        vectors, _ = await service.embed(texts, refuse)  # one tokenization checks the limit and counts
        if normalize:
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return json_response(np.ascontiguousarray(vectors, dtype=np.float32))

    return work


def _tokens_route(services: dict[str, EmbeddingService], pick: Chooser, limits):
    """TEI's /embed_all: every token's vector per input, from one encoder copy of its own per recipe (PyTorch)."""
    copies = {
        id(s): s.embedder.for_thread() if hasattr(s.embedder, "token_vectors") else None for s in services.values()
    }
    lock = asyncio.Lock()

    async def work(request: Request) -> Response:
        payload = await read_json(request, limits)
        service = pick(payload)
        tokens_encoder = copies[id(service)]
        if tokens_encoder is None:
            raise ApiError(501, "token vectors need the PyTorch backend (this server runs an ONNX export)")
        texts = prompted(payload, request_texts(payload, "inputs", service.limits), service.embedder.recipe)
        truncate = payload.get("truncate", False)
        if not isinstance(truncate, bool):
            raise ApiError(422, "'truncate' must be true or false")
        service.token_counts(texts, service.refuses_long or (None if truncate else "send truncate: true"))
        async with lock:  # one request at a time on this copy; the batcher's workers keep their own
            vectors = await asyncio.to_thread(tokens_encoder.token_vectors, texts)
        return json_response([np.ascontiguousarray(v, dtype=np.float32) for v in vectors])

    return work


def _guarded(service: EmbeddingService, endpoint: str, work) -> Callable[[Request], Awaitable[Response]]:
    """A route that checks the key, counts itself in /metrics, holds the client's in-flight slot while it runs, and
    turns an ApiError into its JSON error (429 and 503 with Retry-After)."""

    async def route(request: Request) -> Response:
        client = request.client.host if request.client else "unknown"
        try:
            check_key(request, service.options.api_key)
            with service.admitted(client):
                response = await work(request)
        except ApiError as exc:
            service.metrics.count_request(endpoint, exc.status)
            retry = {"Retry-After": "1"} if exc.status in (429, 503) else None
            return _error(exc.status, exc.message, exc.kind, retry)
        service.metrics.count_request(endpoint, 200)
        return response

    return route


def create_app(embedder: TextEncoder | Mapping[str, TextEncoder], options: ServeOptions = ServeOptions()) -> FastAPI:
    """An ASGI app serving `embedder` with its own workers, batcher and metrics registry; or several recipes by name
    ({name: encoder}), each with its own workers and batcher, chosen by a request's `model`, sharing the key, the
    per-client cap, the drain and one metrics registry."""
    if isinstance(embedder, Mapping):
        if not embedder:
            raise BertlensError("no recipe to serve")
        admission, registry = Admission(options.limits.max_client_requests), ServerMetrics()
        services = {
            name: EmbeddingService(e, replace(options, name=name), admission=admission, metrics=registry)
            for name, e in embedder.items()
        }
    else:
        services = {options.name: EmbeddingService(embedder, options)}
    service = next(iter(services.values()))  # the front: key, admission and metrics are shared by all
    pick, limits = _chooser(services), options.limits

    @contextlib.asynccontextmanager
    async def lifespan(app):
        for each in services.values():
            await each.batcher.start()
        yield
        for each in services.values():
            await each.batcher.stop()  # graceful: queued and in-flight requests finish first

    app = FastAPI(title="bertlens", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None)
    routes = {
        "/v1/embeddings": _openai_route(pick, limits),
        "/embed": _tei_route(pick, limits),
        "/embed_all": _tokens_route(services, pick, limits),
    }
    for path, work in routes.items():
        app.add_api_route(path, _guarded(service, path, work), methods=["POST"])

    @app.get("/v1/models")
    async def models(request: Request):  # OpenAI's model list: the recipes this server runs
        try:
            check_key(request, service.options.api_key)
        except ApiError as exc:
            return _error(exc.status, exc.message, exc.kind)
        data = [
            {
                "id": name,
                "object": "model",
                "created": int(s.started),
                "owned_by": "bertlens",
                "dimensions": s.embedder.dim,
            }
            for name, s in services.items()
        ]
        return {"object": "list", "data": data}

    @app.get("/health")
    async def health():  # 503 while draining, so a load balancer stops sending work here
        return JSONResponse({"status": "draining"}, 503) if service.draining else {"status": "ok"}

    @app.get("/info")
    async def info(request: Request):  # the recipe, model path and fingerprint: behind the key like the rest
        try:
            check_key(request, service.options.api_key)
        except ApiError as exc:
            return _error(exc.status, exc.message, exc.kind)
        return service.info() if len(services) == 1 else {"models": [s.info() for s in services.values()]}

    @app.get("/metrics")
    async def metrics(request: Request):
        try:
            check_key(request, service.options.api_key)
        except ApiError as exc:
            return _error(exc.status, exc.message, exc.kind)
        return Response(service.metrics.render(), media_type=CONTENT_TYPE)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception):  # the server answers, whatever happened
        service.metrics.count_request(request.url.path, 500)
        LOG.error("internal error on %s", request.url.path, exc_info=exc)  # the details stay in the server's log
        return _error(500, "internal error; the server's log has the details", "server_error")

    app.state.service = service
    app.state.services = services
    app.state.batcher = service.batcher
    return app


DRAIN_SECONDS = 30.0  # the longest a SIGTERM waits for requests in flight before the server exits anyway


def run_server(app: FastAPI, host: str, port: int) -> None:
    """uvicorn on uvloop + httptools where installed. SIGTERM or Ctrl-C drains first: new requests get 503 and
    /health says "draining" while the requests in flight finish (up to DRAIN_SECONDS), then the server exits 0;
    a second signal exits at once."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=DRAIN_SECONDS)
    draining_server(config, app.state.service).run()


def draining_server(config, service: EmbeddingService):
    """A uvicorn.Server whose first exit signal drains `service` before the usual graceful shutdown."""
    import uvicorn

    class Draining(uvicorn.Server):
        drain_start: float | None = None

        def handle_exit(self, sig, frame) -> None:
            if self.drain_start is None:
                service.draining, self.drain_start = True, time.monotonic()
            else:
                super().handle_exit(sig, frame)  # a second signal: stop now

        async def on_tick(self, counter: int) -> bool:
            if self.drain_start is not None and not self.should_exit:
                self.should_exit = service.quiet() or time.monotonic() - self.drain_start > DRAIN_SECONDS
            return await super().on_tick(counter)

    return Draining(config)
