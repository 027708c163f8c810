"""A feature bank's encoding spread over a pool of Ray actors (`sweep --engine ray`; issue #51, first part).

Only the encoding goes out: the driver keeps the staged, checksummed, resumable bank of `features/bank.py` and
writes each chunk's rows into it in order, checkpointing as the local build does, so a stopped build resumes from
the rows already written, locally or on Ray. Each actor holds the model once and pools every layer x pooler (and the
non-linear mixes) of its chunk with the same `_pool_batch` the local build uses, and a group of long texts with the
same `pool_pieces`: the bank's rows are the local build's (batches differ, so float rounding may differ in the last
bits). `ActorPool.map` keeps the chunks' order.

A worker that dies (its process killed, its node lost) is restarted by Ray and its chunk run again
(`max_restarts`, `max_task_retries`): the driver writes each chunk's rows once, in order, whichever actor encoded
them. Workers need bertlens installed and the model at the same path. `pip install 'bertlens[ray]'`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import numpy as np

from bertlens.encoding.batching import length_batches
from bertlens.encoding.encoder import Encoder
from bertlens.encoding.tokens import Tokenized
from bertlens.errors import OptionError
from bertlens.extras import RAY_RETRIES, connect_ray
from bertlens.models import ModelRef


class _BankActor:
    """The model once per actor (its weights read once, each setting a copy from memory); pools chunks of texts."""

    def __init__(self, model: str, threads: int) -> None:
        import torch

        from bertlens.models import weights_read_once

        torch.set_num_threads(threads)
        self.model, self.encoders = model, {}
        self.reads = weights_read_once()  # the actor's whole life is one run: later settings copy from memory
        self.reads.__enter__()

    def _encoder(self, settings: tuple) -> Encoder:
        if settings not in self.encoders:
            max_length, precision, attentions = settings
            self.encoders[settings] = Encoder(self.model, max_length=max_length, precision=precision,
                                              attentions=attentions)  # fmt: skip
        return self.encoders[settings]

    def pool(self, tokenized: Tokenized, sizes: list[int], pooling, settings: tuple) -> tuple:
        """[n, L+1, P, H] pooled rows of `tokenized` in its order and [n, Q, M, H] mixes (or None), encoded in the
        batches given (consecutive runs of `sizes` rows: the local pass's own batches, so the rows are its rows)
        by the encoder of `settings` (max_length, precision, attention outputs)."""
        from bertlens.features.bank import _pool_batch

        encoder = self._encoder(settings)
        stacked, mixed = [], []
        with encoder.running():
            for first, size in zip(np.cumsum([0, *sizes[:-1]]), sizes, strict=True):
                states = encoder.forward(tokenized, np.arange(first, first + size), on_device=True)
                batch, batch_mixes = _pool_batch(states, pooling.poolers, pooling.include_special, pooling.mixes)
                stacked.append(batch)
                mixed.append(batch_mixes)
        return _stored(pooling, np.concatenate(stacked), None if mixed[0] is None else np.concatenate(mixed))

    def pool_pieces(self, texts: list[str], long_text, first: int, pooling, settings: tuple) -> tuple:
        """`bank.pool_pieces` of a group of long texts (bank rows first, first+1, ...): [n, L+1, P, H] and mixes."""
        from bertlens.features.bank import pool_pieces

        return _stored(pooling, *pool_pieces(self._encoder(settings), texts, long_text, pooling, first))

    def where(self) -> tuple[str, int]:
        """(Ray node id, process id): which node and process this actor runs in (the cluster tests)."""
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()


class RayBankEngine:
    """Encodes a bank's rows on a pool of Ray actors, chunk by chunk, in order (see the module's docstring)."""

    def __init__(self, model: ModelRef, *, address: str | None = None, workers: int = 2, chunk: int = 256) -> None:
        if workers < 1:
            raise OptionError(f"{{ray_workers}} must be at least 1, got {workers}", "ray_workers")
        connect_ray(address, workers)
        self.model, self.workers, self.chunk = model, workers, chunk
        self.fingerprint = model.fingerprint
        self.actors: list = []  # started now (each loads the model while the driver reads the data); release() stops them
        self._start()

    def _start(self) -> None:
        import ray
        from ray.util import ActorPool

        actor = ray.remote(num_cpus=1, max_restarts=RAY_RETRIES, max_task_retries=RAY_RETRIES)(_BankActor)
        self.actors = [actor.remote(str(self.model.path), 1) for _ in range(self.workers)]
        self.pool = ActorPool(self.actors)

    def serves(self, encoder: Encoder) -> bool:
        """Whether the actors hold this encoder's model (any length, precision or attention outputs: each is built in
        the actor as the encoder asking is)."""
        return encoder.ref.fingerprint == self.fingerprint

    def release(self) -> None:
        """Stop the actors, giving their CPUs back (to the probes' Ray tasks); the next bank starts new ones. The
        Ray instance stays for the process, as `embed --engine ray` leaves it."""
        import ray

        for actor in self.actors:
            ray.kill(actor)
        self.actors = []

    def rows(
        self, encoder: Encoder, tokenized: Tokenized, rest: np.ndarray, pooling
    ) -> Iterator[tuple[np.ndarray, np.ndarray, object]]:
        """(bank rows, [n, L+1, P, H], [n, Q, M, H] or None) per chunk of the rows still to encode (`rest`, tokenized),
        in order. A chunk is a run of the batches the local pass would encode (length_batches), so every row is
        computed in the same padded batch, hence to the same bits, as here; its token ids travel, not its texts."""
        settings = _settings(encoder)
        size = max(1, min(self.chunk, -(-len(rest) // self.workers)))
        chunks: list[list[np.ndarray]] = [[]]
        for batch in length_batches(tokenized.lengths, encoder.max_batch, encoder.max_tokens):  # [b] rows of rest
            if sum(len(b) for b in chunks[-1]) >= size:
                chunks.append([])
            chunks[-1].append(batch)
        chunks = [chunk for chunk in chunks if chunk]
        parts = [np.concatenate(chunk) for chunk in chunks]

        def submit(actor, index: int):
            order = parts[index]
            ids = [tokenized.input_ids[i] for i in order]
            special = [tokenized.special_tokens_mask[i] for i in order]
            sizes = [len(batch) for batch in chunks[index]]
            return actor.pool.remote(Tokenized(ids, special, 0), sizes, pooling, settings)

        for index, stacked, mixed in self._mapped(list(range(len(parts))), submit):
            yield rest[parts[index]], stacked, mixed

    def piece_rows(
        self, encoder: Encoder, texts: list[str], groups: list[np.ndarray], long_text, pooling
    ) -> Iterator[tuple[np.ndarray, np.ndarray, object]]:
        """(bank rows, [n, L+1, P, H], [n, Q, M, H] or None) per group of long texts, in order: each group cut into
        pieces, pooled and aggregated per text by an actor."""
        settings = _settings(encoder)

        def submit(actor, rows: np.ndarray):
            return actor.pool_pieces.remote([texts[i] for i in rows], long_text, int(rows[0]), pooling, settings)

        yield from self._mapped(groups, submit)

    def _mapped(self, parts: list, submit: Callable) -> Iterator[tuple]:
        """(part, *what its actor returned) for every part, in order (ActorPool.map)."""
        if not self.actors:
            self._start()
        results = self.pool.map(submit, parts)
        for part, result in zip(parts, results, strict=True):
            yield part, *result


def _stored(pooling, stacked: np.ndarray, mixed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows as the bank stores them (float16 by default): the same values the driver would write, half the bytes."""
    return stacked.astype(pooling.dtype), None if mixed is None else mixed.astype(pooling.dtype)


def _settings(encoder: Encoder) -> tuple:
    """What an actor builds its own encoder from: (max_length, precision, attention outputs)."""
    return encoder.max_length, encoder.precision, encoder.attentions
