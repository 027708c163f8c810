"""A feature bank's encoding spread over a pool of Ray actors (`sweep --engine ray`; issue #51, first part).

Only the encoding goes out: the driver keeps the staged, checksummed, resumable bank of `features/bank.py` and
writes each chunk's rows into it in order, checkpointing as the local build does, so a stopped build resumes from
the rows already written, locally or on Ray. Each actor holds the model once and pools every layer x pooler (and the
non-linear mixes) of its chunk with the same `_pool_batch` the local build uses: the bank's rows are the local
build's (batches differ, so float rounding may differ in the last bits). `ActorPool.map` keeps the chunks' order.
Workers need bertlens installed and the model at the same path. `pip install 'bertlens[ray]'`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import numpy as np

from bertlens.encoding.encoder import Encoder
from bertlens.errors import OptionError
from bertlens.extras import require
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

    def pool(self, texts: list[str], pooling, settings: tuple) -> tuple[np.ndarray, np.ndarray | None, int]:
        """[n, L+1, P, H] pooled rows of `texts` in their order, [n, Q, M, H] mixes (or None), and how many were cut,
        by the encoder of `settings` (max_length, precision, attention outputs)."""
        from bertlens.features.bank import _pool_batch

        encoder = self._encoder(settings)
        tokenized = encoder.tokenize(texts)
        stacked_rows, mixed_rows = None, None
        for states in encoder.stream(tokenized):
            order = states.doc_index.numpy()  # positions in `texts`
            stacked, mixed = _pool_batch(states, pooling.poolers, pooling.include_special, pooling.mixes)
            if stacked_rows is None:
                stacked_rows = np.zeros((len(texts), *stacked.shape[1:]), dtype=np.float32)
                mixed_rows = None if mixed is None else np.zeros((len(texts), *mixed.shape[1:]), dtype=np.float32)
            stacked_rows[order] = stacked
            if mixed_rows is not None:
                mixed_rows[order] = mixed
        return stacked_rows, mixed_rows, tokenized.truncated


class RayBankEngine:
    """Encodes a bank's rows on a pool of Ray actors, chunk by chunk, in order (see the module's docstring)."""

    def __init__(self, model: ModelRef, *, address: str | None = None, workers: int = 2, chunk: int = 256) -> None:
        require("ray", "the Ray engine (--engine ray)")
        import ray
        from ray.util import ActorPool

        if workers < 1:
            raise OptionError(f"{{ray_workers}} must be at least 1, got {workers}", "ray_workers")
        self.chunk = chunk
        if not ray.is_initialized():
            os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
            ray.init(address=address, num_cpus=None if address else workers, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)  # fmt: skip
        self.fingerprint = model.fingerprint
        actor = ray.remote(num_cpus=1)(_BankActor)
        self.actors = [actor.remote(str(model.path), 1) for _ in range(workers)]
        self.pool = ActorPool(self.actors)

    def serves(self, encoder: Encoder) -> bool:
        """Whether the actors hold this encoder's model (any length, precision or attention outputs: each is built in
        the actor as the encoder asking is)."""
        return encoder.ref.fingerprint == self.fingerprint

    def close(self) -> None:
        """Stop the actors (the Ray instance stays for the process, as `embed --engine ray` leaves it)."""
        import ray

        for actor in self.actors:
            ray.kill(actor)

    def rows(
        self, encoder: Encoder, texts: list[str], rest: np.ndarray, pooling
    ) -> Iterator[tuple[np.ndarray, np.ndarray, object, int]]:
        """(bank rows, [n, L+1, P, H], [n, Q, M, H] or None, texts cut) per chunk of the rows still to encode, in
        order, each encoded as `encoder` encodes."""
        settings = (encoder.max_length, encoder.precision, encoder.attentions)
        size = max(1, min(self.chunk, -(-len(rest) // len(self.actors))))
        parts = [rest[i : i + size] for i in range(0, len(rest), size)]
        work = ((part, [texts[i] for i in part]) for part in parts)
        results = self.pool.map(lambda actor, item: actor.pool.remote(item[1], pooling, settings), work)
        for part, (stacked, mixed, truncated) in zip(parts, results, strict=True):
            yield part, stacked, mixed, truncated


@contextlib.contextmanager
def banks_on_ray(model: ModelRef, *, address: str | None = None, workers: int = 2) -> Iterator[None]:
    """Within this block every bank of `model` is encoded by a pool of Ray actors (`--engine ray` of sweep and
    recommend); the actors stop at its end."""
    from bertlens.features.bank import encoded_by

    engine = RayBankEngine(model, address=address, workers=workers)
    try:
        with encoded_by(engine):
            yield
    finally:
        engine.close()
