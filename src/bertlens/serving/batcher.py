"""Dynamic batching: requests from concurrent clients share forward passes.

Requests wait in a bounded queue. When a worker is free, the batcher takes the oldest request and every
queued request that fits the `max_batch_tokens` budget (while batches encode, the next one accumulates by
itself), and when the previous batch served several requests (clients are arriving concurrently) it also
waits up to `max_wait_ms` for more; a lone client never waits. Each batch is encoded in a worker thread
(the event loop stays free); with several workers, several batches encode at once, each with its own
copy of the embedder (shared weights, own tokenizer). Each request gets its own rows back, in its own
order. A request whose client went away is dropped from its batch's results without touching the
others; a full queue is refused at once (503), not queued without bound.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np


class QueueFull(Exception):
    """The server is at its queue limit: the client should retry later."""


@dataclass
class Job:
    texts: list[str]
    tokens: int
    future: asyncio.Future
    enqueued: float = field(default_factory=time.perf_counter)


@dataclass(frozen=True)
class BatchStats:
    requests: int
    texts: int
    tokens: int
    queue_seconds: tuple[float, ...]
    encode_seconds: float


class DynamicBatcher:
    def __init__(
        self,
        encoders: Sequence[Callable[[list[str]], np.ndarray]],
        *,
        max_batch_tokens: int = 16384,
        max_wait_ms: float = 5.0,
        max_queue: int = 1024,
        on_batch: Callable[[BatchStats], None] | None = None,
    ):
        """`encoders`: one encode function per worker thread; each is only ever called by one thread at a time."""
        if not encoders:
            raise ValueError("need at least one encoder")
        self.encoders = list(encoders)
        self.max_batch_tokens, self.max_wait = max_batch_tokens, max_wait_ms / 1000
        self.max_queue = max_queue
        self.on_batch = on_batch
        self.queue: asyncio.Queue[Job] | None = None
        self.idle: asyncio.Queue[Callable[[list[str]], np.ndarray]] | None = None  # encoders free to take a batch
        self.worker: asyncio.Task | None = None
        self.running: set[asyncio.Task] = set()
        self.executor = ThreadPoolExecutor(max_workers=len(self.encoders), thread_name_prefix="bertlens-encode")
        self.carry: Job | None = None  # a request that did not fit the last batch goes first in the next
        self.last_requests = 0  # requests in the last batch: waiting for more only pays under concurrent load

    async def start(self) -> None:
        self.queue = asyncio.Queue()
        self.idle = asyncio.Queue()
        for encode in self.encoders:
            self.idle.put_nowait(encode)
        self.worker = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Finish every queued request, then stop (graceful shutdown)."""
        if self.queue is not None:
            await self.queue.join()
        if self.worker is not None:
            self.worker.cancel()
        self.executor.shutdown(wait=True)

    async def submit(self, texts: list[str], tokens: int) -> np.ndarray:
        assert self.queue is not None, "start() the batcher first"
        if self.queue.qsize() >= self.max_queue:
            raise QueueFull
        job = Job(texts, tokens, asyncio.get_running_loop().create_future())
        self.queue.put_nowait(job)
        return await job.future

    def _fits(self, batch: list[Job], tokens: int, job: Job) -> bool:
        if tokens + job.tokens > self.max_batch_tokens:
            self.carry = job
            return False
        batch.append(job)
        return True

    async def _collect(self) -> list[Job]:
        """The oldest request, queued requests up to the token budget, and, when the last batch served several
        requests (clients are arriving concurrently), what arrives within `max_wait`.

        With other workers free, the queue is shared out instead: this batch takes its even share of what is
        queued and does not wait, so the free workers encode the rest at the same time (clients that all got
        their answers at once otherwise send their next requests as one wave, which one worker would take whole).
        """
        first = self.carry or await self.queue.get()
        self.carry = None
        batch, tokens = [first], first.tokens
        others = self.idle.qsize()  # workers free besides this one
        share = math.ceil((self.queue.qsize() + 1) / (others + 1)) if others else None
        while tokens < self.max_batch_tokens and not self.queue.empty():
            if share is not None and len(batch) >= share:
                return batch
            if not self._fits(batch, tokens, self.queue.get_nowait()):
                return batch
            tokens += batch[-1].tokens
        waits = self.last_requests > 1 and not others
        deadline = time.perf_counter() + (self.max_wait if waits else 0.0)
        while tokens < self.max_batch_tokens and (remaining := deadline - time.perf_counter()) > 0:
            try:
                job = await asyncio.wait_for(self.queue.get(), remaining)
            except TimeoutError:
                break
            if not self._fits(batch, tokens, job):
                break
            tokens += job.tokens
        self.last_requests = len(batch)
        return batch

    async def _run(self) -> None:
        """Whenever a worker is free, collect a batch and hand it to that worker without waiting for it."""
        while True:
            encode = await self.idle.get()
            batch = await self._collect()
            task = asyncio.create_task(self._encode(batch, encode))
            self.running.add(task)
            task.add_done_callback(self.running.discard)

    async def _encode(self, batch: list[Job], encode: Callable[[list[str]], np.ndarray]) -> None:
        loop = asyncio.get_running_loop()
        live = [job for job in batch if not job.future.done()]  # a client that left is not encoded for
        started = time.perf_counter()
        try:
            if live:
                texts = [text for job in live for text in job.texts]
                vectors = await loop.run_in_executor(self.executor, encode, texts)
                start = 0
                for job in live:
                    if not job.future.done():
                        job.future.set_result(vectors[start : start + len(job.texts)])
                    start += len(job.texts)
        except Exception as exc:  # noqa: BLE001 - the batch's error goes to each of its requests, the server stays up
            for job in live:
                if not job.future.done():
                    job.future.set_exception(exc)
        finally:
            self.idle.put_nowait(encode)
            for _ in batch:
                self.queue.task_done()
        if self.on_batch is not None and live:
            self.on_batch(
                BatchStats(
                    len(live),
                    sum(len(j.texts) for j in live),
                    sum(j.tokens for j in live),
                    tuple(started - j.enqueued for j in live),
                    time.perf_counter() - started,
                )
            )
