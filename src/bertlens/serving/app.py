"""`bertlens serve` as a library: `load_encoder` + `create_app` give a Python caller exactly what the CLI runs.

Routes (`ROUTES` below: this list, the start-up banner and docs/guide.md's table are rendered from it):
<!-- routes -->
POST /v1/embeddings  OpenAI's embeddings: input, encoding_format (float, base64, int8, ubinary), dimensions where measured
POST /embed          TEI-style: inputs, normalize, truncate -> one vector per input
POST /embed_all      TEI-style token output: every token's vector per input (backends with token vectors)
GET  /v1/models      the recipes this server runs (OpenAI's model list)
GET  /health         liveness, no key; 503 while draining
GET  /info           recipe, model fingerprint, width, limits, backend
GET  /metrics        Prometheus: requests, texts, tokens, batches, queue and encode time
<!-- /routes -->
Every route but /health needs the key when one is set. Both embedding routes take "input_type": "query" |
"document": the recipe's query_prompt or document_prompt goes before each text. Every refusal is a JSON error
with the right status: 400 bad JSON, 401 key, 413 too large, 415 not JSON, 422 invalid input, 429 a client over
its in-flight limit (when one is set), 501 a route the backend cannot answer, 503 queue full. Requests are
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
from dataclasses import dataclass, replace

import numpy as np

from bertlens.embedding.backends import BackendSpec, make_encoder
from bertlens.embedding.protocol import TOKEN_VECTORS, TextEncoder
from bertlens.errors import BertlensError, did_you_mean
from bertlens.extras import require
from bertlens.representation.choices import SERVED_BACKENDS
from bertlens.representation.dimensions import truncate
from bertlens.representation.recipe import Recipe
from bertlens.serving.config import ServeOptions
from bertlens.version import __version__

require("serve", "bertlens.serving.app (bertlens serve)")

from fastapi import FastAPI, Request  # noqa: E402
from fastapi.responses import JSONResponse, Response  # noqa: E402
from starlette.exceptions import HTTPException as StarletteHTTPException  # noqa: E402

from bertlens.serving.metrics import CONTENT_TYPE, ServerMetrics  # noqa: E402
from bertlens.serving.requests import (  # noqa: E402
    ENCODINGS,
    ApiError,
    check_fields,
    check_key,
    encoded,
    json_response,
    prompted,
    read_json,
    request_texts,
)
from bertlens.serving.service import Admission, EmbeddingService  # noqa: E402

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
    """The encoder a server runs (embedding/backends.make_encoder): `recipe` on PyTorch, or an ONNX export
    directory; the cores split between `workers` so concurrent batches share them instead of oversubscribing."""
    if backend not in SERVED_BACKENDS:
        raise BertlensError(f"unknown backend '{backend}' for serving: {did_you_mean(backend, SERVED_BACKENDS)}")
    spec = BackendSpec(
        backend, recipe, model_dir, threads_per_worker(workers), device=device, trust_remote_code=trust_remote_code
    )
    return make_encoder(spec)


def load_recipes(
    recipes: Mapping[str, Recipe], *, workers: int = 1, trust_remote_code: bool = False, device: str = "cpu"
) -> dict[str, TextEncoder]:
    """One PyTorch encoder per recipe; recipes that run the same model the same way (model, max length, precision,
    attention maps) share one Encoder, so its weights are loaded once."""
    threads = threads_per_worker(workers)
    shared: dict[tuple, object] = {}
    out: dict[str, TextEncoder] = {}
    for name, recipe in recipes.items():
        key = (recipe.model, recipe.max_length, recipe.precision, recipe.needs_attentions)
        spec = BackendSpec("torch", recipe, threads=threads, device=device, trust_remote_code=trust_remote_code)
        out[name] = make_encoder(replace(spec, encoder=shared.get(key)))
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
        check_fields(payload, "/v1/embeddings")
        service = pick(payload)
        texts = prompted(payload, request_texts(payload, "input", service.limits), service.embedder.recipe)
        encoding = payload.get("encoding_format") or "float"  # null is absent, as OpenAI reads it
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
        check_fields(payload, "/embed")
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
        id(s): s.embedder.for_thread() if TOKEN_VECTORS in s.embedder.capabilities else None for s in services.values()
    }
    lock = asyncio.Lock()

    async def work(request: Request) -> Response:
        payload = await read_json(request, limits)
        check_fields(payload, "/embed_all")
        service = pick(payload)
        tokens_encoder = copies[id(service)]
        if tokens_encoder is None:
            backend = type(service.embedder).__name__
            raise ApiError(
                501, f"/embed_all needs a backend with token vectors (PyTorch); this one ({backend}) has none"
            )
        texts = prompted(payload, request_texts(payload, "inputs", service.limits), service.embedder.recipe)
        truncate = payload.get("truncate", False)
        if not isinstance(truncate, bool):
            raise ApiError(422, "'truncate' must be true or false")
        tokens, over = service.token_counts(
            texts, service.refuses_long or (None if truncate else "send truncate: true")
        )
        values = tokens * service.embedder.dim  # tokens counted with the special ones, as /embed_all returns them
        if values > service.limits.max_token_values:
            raise ApiError(
                413,
                f"the token vectors would be {values:,} floats (about {values * 10 // 2**20} MB of JSON); at most "
                f"{service.limits.max_token_values:,}: send fewer or shorter inputs",
            )
        async with lock:  # one request at a time on this copy; the batcher's workers keep their own
            vectors = await asyncio.to_thread(_token_vectors, tokens_encoder, texts, payload.get("input_type"))
        service.metrics.texts.inc(len(texts))  # /metrics counts these texts too, not only the batcher's
        service.metrics.tokens.inc(tokens)
        service.metrics.truncated.inc(over)
        return json_response([np.ascontiguousarray(v, dtype=np.float32) for v in vectors])

    return work


def _token_vectors(encoder: TextEncoder, texts: list[str], role: str | None) -> list[np.ndarray]:
    """/embed_all's vectors: a multi-vector recipe's kept tokens, read as its queries or documents (a recipe that
    reads them differently needs input_type); any other recipe's every token, before pooling."""
    if not getattr(encoder, "multi_vector", False):
        return encoder.token_vectors(texts)
    if role is None and encoder.recipe.tokens_differ_by_role:
        raise ApiError(
            422,
            "this multi-vector recipe reads queries and documents differently: send input_type 'query' or 'document'",
        )
    reader = encoder.for_queries() if role == "query" else encoder  # the texts carry the role's prompt already
    packed = reader.embed_tokens(texts)  # [T, D] with offsets [n+1]
    return [packed.of(i) for i in range(packed.texts)]


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


@dataclass(frozen=True)
class Route:
    """One route of the server, as data: its handler's builder, and the line the docs render for it."""

    method: str  # POST or GET
    path: str
    keyed: bool  # behind the API key (when one is set)
    summary: str  # one line: the docstring, the start-up banner and docs/guide.md's table
    build: Callable[[Served], Callable[[Request], Awaitable[Response]]]  # the handler, given what is served


@dataclass(frozen=True)
class Served:
    """What every route's handler reads: the services by recipe name, the one in front, the request chooser."""

    services: dict[str, EmbeddingService]
    front: EmbeddingService  # the key, admission and metrics are shared by all services; this one holds them
    pick: Chooser
    limits: object


def _models(served: Served):
    async def work(request: Request):  # OpenAI's model list: the recipes this server runs
        data = [
            {
                "id": name,
                "object": "model",
                "created": int(s.started),
                "owned_by": "bertlens",
                "dimensions": s.embedder.dim,
            }
            for name, s in served.services.items()
        ]
        return {"object": "list", "data": data}

    return work


def _health(served: Served):
    async def work(request: Request):  # 503 while draining, so a load balancer stops sending work here
        return JSONResponse({"status": "draining"}, 503) if served.front.draining else {"status": "ok"}

    return work


def _info(served: Served):
    async def work(request: Request):  # the recipe, model path and fingerprint
        if len(served.services) == 1:
            return served.front.info()
        return {"models": [s.info() for s in served.services.values()]}

    return work


def _metrics(served: Served):
    async def work(request: Request):
        return Response(served.front.metrics.render(), media_type=CONTENT_TYPE)

    return work


ROUTES: tuple[Route, ...] = (
    Route(
        "POST",
        "/v1/embeddings",
        True,
        "OpenAI's embeddings: input, encoding_format (float, base64, int8, ubinary), dimensions where measured",
        lambda s: _openai_route(s.pick, s.limits),
    ),
    Route(
        "POST", "/embed", True, "TEI-style: inputs, normalize, truncate -> one vector per input",
        lambda s: _tei_route(s.pick, s.limits),
    ),
    Route(
        "POST", "/embed_all", True, "TEI-style token output: every token's vector per input (backends with token vectors)",
        lambda s: _tokens_route(s.services, s.pick, s.limits),
    ),
    Route("GET", "/v1/models", True, "the recipes this server runs (OpenAI's model list)", _models),
    Route("GET", "/health", False, "liveness, no key; 503 while draining", _health),
    Route("GET", "/info", True, "recipe, model fingerprint, width, limits, backend", _info),
    Route("GET", "/metrics", True, "Prometheus: requests, texts, tokens, batches, queue and encode time", _metrics),
)  # fmt: skip


def route_lines(routes: tuple[Route, ...] | None = None) -> list[str]:
    """The routes as the docstring lists them: 'POST /embed          TEI-style: ...'."""
    routes = ROUTES if routes is None else routes
    return [f"{r.method:<4} {r.path:<15} {r.summary}" for r in routes]


def route_table(routes: tuple[Route, ...] | None = None) -> str:
    """The routes as docs/guide.md's Markdown table."""
    routes = ROUTES if routes is None else routes
    rows = [f"| `{r.method} {r.path}` | {'yes' if r.keyed else 'no'} | {r.summary} |" for r in routes]
    return "\n".join(["| route | key | what |", "|---|---|---|", *rows])


def route_banner(routes: tuple[Route, ...] | None = None) -> str:
    """The start-up banner's list: 'POST /v1/embeddings /embed ..., GET /v1/models ...'."""
    routes = ROUTES if routes is None else routes
    by_method: dict[str, list[str]] = {}
    for route in routes:
        by_method.setdefault(route.method, []).append(route.path)
    return ", ".join(f"{method} {' '.join(paths)}" for method, paths in by_method.items())


def _keyed(front: EmbeddingService, work):
    """A GET route behind the key: the check, then the handler; a refusal is its JSON error."""

    async def route(request: Request):
        try:
            check_key(request, front.options.api_key)
        except ApiError as exc:
            return _error(exc.status, exc.message, exc.kind)
        return await work(request)

    return route


def create_app(embedder: TextEncoder | Mapping[str, TextEncoder], options: ServeOptions = ServeOptions()) -> FastAPI:
    """An ASGI app serving `embedder` with its own workers, batcher and metrics registry; or several recipes by name
    ({name: encoder}), each with its own workers and batcher, chosen by a request's `model`, sharing the key, the
    per-client cap, the drain and one metrics registry. Its routes are ROUTES."""
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
    served = Served(services, service, _chooser(services), options.limits)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        for each in services.values():
            await each.batcher.start()
        yield
        for each in services.values():
            await each.batcher.stop()  # graceful: queued and in-flight requests finish first

    app = FastAPI(title="bertlens", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None)
    for route in ROUTES:
        work = route.build(served)
        if route.method == "POST":  # embedding work: the key, the client's in-flight slot, /metrics counts
            app.add_api_route(route.path, _guarded(service, route.path, work), methods=["POST"])
        else:
            app.add_api_route(route.path, _keyed(service, work) if route.keyed else work, methods=["GET"])

    @app.exception_handler(StarletteHTTPException)
    async def no_such_route(request: Request, exc: StarletteHTTPException):  # 404 and 405 in the same error shape
        if exc.status_code == 404:
            routes = ", ".join(f"{r.method} {r.path}" for r in ROUTES)
            return _error(404, f"no route {request.url.path}; this server has: {routes}", "not_found")
        if exc.status_code == 405:
            allowed = [r.method for r in ROUTES if r.path == request.url.path]
            message = f"{request.url.path} takes {', '.join(allowed)}, not {request.method}"
            return _error(405, message, headers={"Allow": ", ".join(allowed)})
        return _error(exc.status_code, str(exc.detail), headers=exc.headers)

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
            else:  # a second signal: stop now, without uvicorn's own graceful wait for connections
                self.should_exit = self.force_exit = True

        async def on_tick(self, counter: int) -> bool:
            if self.drain_start is not None and not self.should_exit:
                self.should_exit = service.quiet() or time.monotonic() - self.drain_start > DRAIN_SECONDS
            return await super().on_tick(counter)

    return Draining(config)
