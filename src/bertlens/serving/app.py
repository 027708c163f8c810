"""`bertlens serve` as an ASGI app: the recipe behind OpenAI-compatible and TEI-style endpoints.

POST /v1/embeddings  OpenAI's request and response (input: a string or a list of strings; encoding_format
                     float or base64; dimensions only as the full width; usage with token counts), so the
                     official `openai` client works unchanged
POST /embed          TEI-style: {"inputs": ..., "normalize": true, "truncate": false} -> [[...], ...]
GET  /health         liveness;  GET /info: recipe, model fingerprint, limits, backend;  GET /metrics: Prometheus
Every refusal is a JSON error with the right status: 400 bad JSON, 401 key, 413 too large, 415 not JSON,
422 invalid input, 429 a client over its in-flight limit (when one is set), 503 queue full. Requests are
validated before they are queued; the model runs in one worker thread, off the event loop, on batches made by
`DynamicBatcher`.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from bertlens.serving.batcher import BatchStats, DynamicBatcher, QueueFull
from bertlens.version import __version__

LONG_TEXT_POLICIES = ("truncate", "refuse")
SHORTEN = "shorten or split them (this server refuses long texts)"


@dataclass(frozen=True)
class ServeLimits:
    max_batch_tokens: int = 16384
    max_wait_ms: float = 5.0
    max_inputs: int = 256  # texts per request
    max_chars: int = 20000  # characters per text
    max_body_bytes: int = 4 * 1024 * 1024
    max_queue: int = 1024  # requests waiting
    long_text: str = "truncate"  # texts over the model's limit: truncate (and count) or refuse (413)
    max_client_requests: int = 0  # requests one client address may have in flight (0: no limit); over it, 429


class ApiError(Exception):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


def _texts(payload: dict, field: str, limits: ServeLimits) -> list[str]:
    """payload[field]: a string or a list of strings, each non-empty and within the limits."""
    if field not in payload:
        raise ApiError(422, f"missing '{field}': a string or a list of strings")
    value = payload[field]
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts:
        raise ApiError(422, f"'{field}' must be a non-empty string or a non-empty list of strings")
    if len(texts) > limits.max_inputs:
        raise ApiError(413, f"'{field}' has {len(texts)} texts; at most {limits.max_inputs} per request")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ApiError(
                422,
                f"'{field}'[{i}] is a {type(text).__name__}; every input must be a string (token arrays and nested "
                "lists are not accepted)",
            )
        if not text.strip():
            raise ApiError(422, f"'{field}'[{i}] is empty; every input needs some text")
        if len(text) > limits.max_chars:
            raise ApiError(413, f"'{field}'[{i}] has {len(text)} characters; at most {limits.max_chars}")
    return texts


def _encode_base64(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _json(content) -> Response:
    """Serialised once, by orjson, straight from float32 arrays: each number is the shortest text that reads back
    as the same float32, and FastAPI's per-element encoder (most of a float response's cost) is skipped."""
    return Response(orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json")


def create_app(
    embedder,
    limits: ServeLimits = ServeLimits(),
    *,
    encoders: Sequence[Callable[[list[str]], np.ndarray]] | None = None,
    api_key: str | None = None,
    name: str = "bertlens",
):
    """An ASGI app serving `embedder` (an Embedder or OnnxEmbedder): its own batcher and metrics registry.

    `encoders`: one encode function per worker, each encoding a batch while the others do (default: the
    embedder's own, one worker; `serve --workers N` passes the embedder's and N-1 `for_thread()` copies).
    """
    if limits.long_text not in LONG_TEXT_POLICIES:
        raise ValueError(f"long_text must be one of {LONG_TEXT_POLICIES}")
    encoders = list(encoders) if encoders else [embedder.encode]
    # the event loop counts tokens with a tokenizer of its own: the workers' tokenizers are busy in their threads
    tokenizer = copy.deepcopy(embedder.tokenizer if hasattr(embedder, "tokenizer") else embedder.encoder.tokenizer)
    max_length = embedder.max_length
    registry = CollectorRegistry()
    requests = Counter(
        "bertlens_requests", "requests by endpoint and status", ["endpoint", "status"], registry=registry
    )
    texts_total = Counter("bertlens_texts", "texts embedded", registry=registry)
    tokens_total = Counter("bertlens_tokens", "tokens embedded", registry=registry)
    truncated_total = Counter("bertlens_truncated_texts", "texts cut at the model's limit", registry=registry)
    batch_texts = Histogram(
        "bertlens_batch_texts", "texts per batch", buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), registry=registry
    )
    queue_seconds = Histogram("bertlens_queue_seconds", "time a request waited for its batch", registry=registry)
    encode_seconds = Histogram("bertlens_encode_seconds", "time to encode a batch", registry=registry)

    def record(stats: BatchStats) -> None:
        batch_texts.observe(stats.texts)
        encode_seconds.observe(stats.encode_seconds)
        for waited in stats.queue_seconds:
            queue_seconds.observe(waited)
        texts_total.inc(stats.texts)
        tokens_total.inc(stats.tokens)

    batcher = DynamicBatcher(
        encoders,
        max_batch_tokens=limits.max_batch_tokens,
        max_wait_ms=limits.max_wait_ms,
        max_queue=limits.max_queue,
        on_batch=record,
    )
    started = time.time()

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await batcher.start()
        yield
        await batcher.stop()  # graceful: queued and in-flight requests finish first

    app = FastAPI(title="bertlens", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None)

    def error(status: int, message: str, kind: str = "invalid_request_error", headers=None) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status, headers=headers)

    async def read_json(request: Request) -> dict:
        if api_key is not None and request.headers.get("authorization") != f"Bearer {api_key}":
            raise ApiError(401, "missing or wrong API key (send 'Authorization: Bearer KEY')", "authentication_error")
        if "application/json" not in request.headers.get("content-type", ""):
            raise ApiError(415, "send the request body as JSON (Content-Type: application/json)")
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
            raise ApiError(413, f"request body over {limits.max_body_bytes} bytes")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limits.max_body_bytes:
                raise ApiError(413, f"request body over {limits.max_body_bytes} bytes")
        try:
            payload = orjson.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise ApiError(400, "the request body is not valid JSON") from None
        if not isinstance(payload, dict):
            raise ApiError(422, "the request body must be a JSON object")
        return payload

    def count_tokens(texts: list[str], refuse_long: str | None) -> tuple[int, int]:
        """(tokens the model will read, texts over its limit); with `refuse_long` (how to fix it), over is a 413."""
        lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=True)["input_ids"]]
        over = sum(n > max_length for n in lengths)
        if over and refuse_long:
            raise ApiError(413, f"{over} input(s) exceed the model's limit of {max_length} tokens; {refuse_long}")
        return sum(min(n, max_length) for n in lengths), over

    async def embed(texts: list[str], refuse_long: str | None) -> tuple[np.ndarray, int]:
        tokens, over = count_tokens(texts, refuse_long)
        try:
            vectors = await batcher.submit(texts, tokens)
        except QueueFull:
            raise ApiError(503, "the server is at its queue limit; retry shortly", "server_busy") from None
        truncated_total.inc(over)
        return vectors, tokens

    in_flight: dict[str, int] = {}  # requests per client address, for --max-client-requests

    async def handle(endpoint: str, work, request: Request):
        client = request.client.host if request.client else "unknown"
        try:
            cap = limits.max_client_requests
            if cap and in_flight.get(client, 0) >= cap:
                raise ApiError(
                    429,
                    f"this client already has {cap} request(s) in flight; wait for them or retry shortly",
                    "rate_limit_exceeded",
                )
            in_flight[client] = in_flight.get(client, 0) + 1
            try:
                response = await work()
            finally:
                in_flight[client] -= 1
                if not in_flight[client]:
                    del in_flight[client]
            requests.labels(endpoint, "200").inc()
            return response
        except ApiError as exc:
            requests.labels(endpoint, str(exc.status)).inc()
            retry = {"Retry-After": "1"} if exc.status in (429, 503) else None
            return error(exc.status, exc.message, exc.kind, retry)

    @app.post("/v1/embeddings")
    async def openai_embeddings(request: Request):
        async def work():
            payload = await read_json(request)
            texts = _texts(payload, "input", limits)
            encoding = payload.get("encoding_format", "float")
            if encoding not in ("float", "base64"):
                raise ApiError(422, "'encoding_format' must be 'float' or 'base64'")
            dimensions = payload.get("dimensions")
            if dimensions is not None and dimensions != embedder.dim:
                raise ApiError(
                    422,
                    f"'dimensions' {dimensions} is not supported: this recipe was not trained for shortened vectors "
                    f"(Matryoshka); omit it or pass {embedder.dim}",
                )
            vectors, tokens = await embed(texts, SHORTEN if limits.long_text == "refuse" else None)
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": _encode_base64(v) if encoding == "base64" else v,
                }
                for i, v in enumerate(np.ascontiguousarray(vectors, dtype=np.float32))
            ]
            usage = {"prompt_tokens": tokens, "total_tokens": tokens}
            return _json({"object": "list", "data": data, "model": name, "usage": usage})

        return await handle("/v1/embeddings", work, request)

    @app.post("/embed")
    async def tei_embed(request: Request):
        async def work():
            payload = await read_json(request)
            texts = _texts(payload, "inputs", limits)
            normalize, truncate = payload.get("normalize", True), payload.get("truncate", False)
            if not isinstance(normalize, bool) or not isinstance(truncate, bool):
                raise ApiError(422, "'normalize' and 'truncate' must be true or false")
            refuse = SHORTEN if limits.long_text == "refuse" else None if truncate else "send truncate: true"
            vectors, _ = await embed(texts, refuse)  # one tokenization checks the limit and counts
            if normalize:
                vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            return _json(np.ascontiguousarray(vectors, dtype=np.float32))

        return await handle("/embed", work, request)

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/info")
    async def info():
        recipe = embedder.recipe
        return {
            "name": name,
            "version": __version__,
            "backend": type(embedder).__name__,
            "recipe": recipe.to_dict(),
            "model_fingerprint": embedder.fingerprint,
            "dim": embedder.dim,
            "max_length": max_length,
            "limits": asdict(limits),
            "workers": len(encoders),
            "uptime_seconds": round(time.time() - started, 1),
        }

    @app.get("/metrics")
    async def metrics():
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception):  # the server answers, whatever happened
        requests.labels(request.url.path, "500").inc()
        return error(500, f"internal error: {type(exc).__name__}: {exc}", "server_error")

    app.state.batcher = batcher
    return app
