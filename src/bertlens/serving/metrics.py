"""The server's Prometheus metrics: one registry per server, so two servers in a process never mix counts."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from bertlens.serving.batcher import BatchStats

CONTENT_TYPE = CONTENT_TYPE_LATEST


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "bertlens_requests", "requests by endpoint and status", ["endpoint", "status"], registry=self.registry
        )
        self.texts = Counter("bertlens_texts", "texts embedded", registry=self.registry)
        self.tokens = Counter("bertlens_tokens", "tokens embedded", registry=self.registry)
        self.truncated = Counter("bertlens_truncated_texts", "texts cut at the model's limit", registry=self.registry)
        self.batch_texts = Histogram(
            "bertlens_batch_texts",
            "texts per batch",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
            registry=self.registry,
        )
        self.queue_seconds = Histogram(
            "bertlens_queue_seconds", "time a request waited for its batch", registry=self.registry
        )
        self.encode_seconds = Histogram("bertlens_encode_seconds", "time to encode a batch", registry=self.registry)

    def record_batch(self, stats: BatchStats) -> None:
        self.batch_texts.observe(stats.texts)
        self.encode_seconds.observe(stats.encode_seconds)
        for waited in stats.queue_seconds:
            self.queue_seconds.observe(waited)
        self.texts.inc(stats.texts)
        self.tokens.inc(stats.tokens)

    def count_request(self, endpoint: str, status: int) -> None:
        self.requests.labels(endpoint, str(status)).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
