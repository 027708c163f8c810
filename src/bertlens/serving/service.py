"""The serving state behind the routes: one encoder, its worker copies, the batcher, limits and metrics.

Requests are checked here before they are queued (token counts on the event loop's own tokenizer copy,
the long-text policy, a client's in-flight limit), then encoded in batches by `DynamicBatcher` on
`workers` threads, each with its own `for_thread()` copy of the encoder (shared weights).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import asdict

import numpy as np

from bertlens.embedding.protocol import TextEncoder
from bertlens.serving.batcher import DynamicBatcher, QueueFull
from bertlens.serving.config import ServeOptions
from bertlens.serving.metrics import ServerMetrics
from bertlens.serving.requests import ApiError
from bertlens.version import __version__

SHORTEN = "shorten or split them (this server refuses long texts)"


class Admission:
    """Who may start a request now, shared by every recipe one server runs: requests in flight per client
    address (for max_client_requests) and whether the server is draining."""

    def __init__(self, max_client_requests: int = 0):
        self.cap = max_client_requests
        self.in_flight: dict[str, int] = {}
        self.draining = False  # shutting down: new requests get 503, those in flight finish

    @contextlib.contextmanager
    def admitted(self, client: str) -> Iterator[None]:
        """One request of `client` in flight; over the cap, a 429 instead; while draining, a 503."""
        if self.draining:
            raise ApiError(503, "the server is shutting down; retry on another instance", "server_busy")
        if self.cap and self.in_flight.get(client, 0) >= self.cap:
            raise ApiError(
                429,
                f"this client already has {self.cap} request(s) in flight; wait for them or retry shortly",
                "rate_limit_exceeded",
            )
        self.in_flight[client] = self.in_flight.get(client, 0) + 1
        try:
            yield
        finally:
            self.in_flight[client] -= 1
            if not self.in_flight[client]:
                del self.in_flight[client]


class EmbeddingService:
    def __init__(
        self,
        embedder: TextEncoder,
        options: ServeOptions = ServeOptions(),
        *,
        admission: Admission | None = None,
        metrics: ServerMetrics | None = None,
    ):
        """One recipe's encoder, workers and batcher; `admission` and `metrics` are shared when a server runs
        several recipes (one client cap, one drain, one /metrics registry). A chunk recipe (maxp) serves its
        query reading: one vector per input; its documents go into a store with `bertlens index`."""
        if getattr(embedder, "chunked", False):
            embedder = embedder.for_queries()
        self.embedder, self.options, self.limits = embedder, options, options.limits
        copies = [embedder] + [embedder.for_thread() for _ in range(options.workers - 1)]
        self.count_tokens = embedder.token_counter()  # the event loop's own: the workers' are busy in their threads
        self.metrics = metrics or ServerMetrics()
        self.admission = admission or Admission(options.limits.max_client_requests)
        self.batcher = DynamicBatcher(
            [copy.encode for copy in copies],
            max_batch_tokens=self.limits.max_batch_tokens,
            max_wait_ms=self.limits.max_wait_ms,
            max_queue=self.limits.max_queue,
            on_batch=self.metrics.record_batch,
        )
        self.started = time.time()

    @property
    def draining(self) -> bool:
        return self.admission.draining

    @draining.setter
    def draining(self, value: bool) -> None:
        self.admission.draining = value

    def admitted(self, client: str):
        return self.admission.admitted(client)

    def quiet(self) -> bool:
        """No request in flight: a draining server may exit without losing one."""
        return not self.admission.in_flight

    @property
    def refuses_long(self) -> str | None:
        """How to fix a text over the limit when the policy refuses them, else None (truncate)."""
        return SHORTEN if self.limits.long_text == "refuse" else None

    def token_counts(self, texts: list[str], refuse_long: str | None) -> tuple[int, int]:
        """(tokens the model will read, texts over its limit); with `refuse_long` (how to fix it), over is a 413."""
        limit = self.embedder.max_length
        lengths = self.count_tokens(texts)
        over = sum(n > limit for n in lengths)
        if over and refuse_long:
            raise ApiError(413, f"{over} input(s) exceed the model's limit of {limit} tokens; {refuse_long}")
        return sum(min(n, limit) for n in lengths), over

    async def embed(self, texts: list[str], refuse_long: str | None) -> tuple[np.ndarray, int]:
        """Vectors [n, D] float32 for one request's texts, and the tokens they cost."""
        if getattr(self.embedder, "multi_vector", False):
            raise ApiError(
                422,
                "this recipe keeps every token's vector (pooler 'tokens'), not one per input: ask /embed_all, with "
                "input_type 'query' or 'document'",
            )
        tokens, over = self.token_counts(texts, refuse_long)
        try:
            vectors = await self.batcher.submit(texts, tokens)
        except QueueFull:
            raise ApiError(503, "the server is at its queue limit; retry shortly", "server_busy") from None
        self.metrics.truncated.inc(over)
        return np.ascontiguousarray(vectors, dtype=np.float32), tokens

    def check_dimensions(self, dimensions) -> int | None:
        """The width to cut vectors to (None: the full width). A shorter width is answered only where the recipe
        carries a measured loss for it within the server's limit (the sweep writes it), or when allowed."""
        full = self.embedder.dim
        if dimensions is None or dimensions == full:
            return None
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or not 1 <= dimensions < full:
            raise ApiError(422, f"'dimensions' must be an integer from 1 to {full}, got {dimensions!r}")
        if self.options.any_dimensions:
            return dimensions
        loss = self.embedder.recipe.loss_at(dimensions)
        measured = [w for w, v in self.embedder.recipe.dimension_loss or () if v <= self.options.max_dimension_loss]
        offer = f"widths within the limit: {', '.join(map(str, measured)) or 'none'}; or omit it ({full})"
        if loss is None:
            raise ApiError(
                422,
                f"'dimensions' {dimensions}: the loss at this width was never measured for this recipe (a similarity "
                "or retrieval sweep measures it for the recipe it recommends; a classification recipe's vectors feed a "
                f"classifier, whose width is not cut); {offer}, or start the server with --any-dimensions",
            )
        if loss > self.options.max_dimension_loss:
            raise ApiError(
                422,
                f"'dimensions' {dimensions}: this recipe loses {loss:.4f} of its score at that width "
                f"(measured by the sweep), over this server's limit of {self.options.max_dimension_loss}; "
                f"{offer}",
            )
        return dimensions

    def info(self) -> dict:
        embedder = self.embedder
        return {
            "name": self.options.name,
            "version": __version__,
            "backend": type(embedder).__name__,
            "recipe": embedder.recipe.to_dict(),
            "model_fingerprint": embedder.fingerprint,
            "dim": embedder.dim,
            "max_length": embedder.max_length,
            "limits": asdict(self.limits),
            "workers": self.options.workers,
            "uptime_seconds": round(time.time() - self.started, 1),
        }
