"""`bertlens embed --engine ray`: the same embed job, with the encoding spread over a pool of Ray actors.

Reading, validation, shards, resume, checksums and the output file stay exactly the local job's
(`run_embed`); only a shard's encoding goes out: it is cut into chunks that a pool of actors encodes
in order (`ActorPool.map` keeps the order), each actor holding one `Embedder` that loads the model
once for the whole job. With no address a local Ray instance is started with one CPU per worker;
with one, the pool joins that cluster. Workers need bertlens installed and the model at the same
path (or a hub id they can reach). `pip install bertlens[ray]`.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.protocol import ChunkEmbeddings, Embeddings, TextEncoder, TokenCounter, chunked_refusal
from bertlens.errors import BertlensError
from bertlens.extras import RAY_RETRIES, connect_ray
from bertlens.progress import Progress, silent
from bertlens.representation.recipe import Recipe


class _EmbedActor:
    """One model per actor, loaded once; encodes chunks of texts."""

    def __init__(self, recipe: dict, threads: int, trust_remote_code: bool) -> None:
        import torch

        torch.set_num_threads(threads)
        self.embedder = Embedder(Recipe.from_dict(recipe), trust_remote_code=trust_remote_code)

    def embed(self, texts: list[str], queries: bool = False) -> Embeddings:
        return (self.embedder.for_queries() if queries else self.embedder).embed(texts)

    def embed_chunks(self, texts: list[str]) -> ChunkEmbeddings:
        return self.embedder.embed_chunks(texts)


class RayEmbedder(TextEncoder):
    """The `TextEncoder` interface, backed by a pool of Ray actors."""

    def __init__(
        self,
        recipe: Recipe,
        *,
        address: str | None = None,
        workers: int = 2,
        threads_per_worker: int = 1,
        chunk: int = 256,
        trust_remote_code: bool = False,
    ):
        if workers < 1 or chunk < 1:
            raise BertlensError("--ray-workers and the chunk size must be at least 1")
        connect_ray(address, workers * threads_per_worker)
        import ray
        from ray.util import ActorPool

        local = Embedder(recipe, trust_remote_code=trust_remote_code)  # the driver's copy: dim, limits, fingerprint
        self.recipe, self.dim, self.fingerprint = local.recipe, local.dim, local.fingerprint
        self.max_length, self.chunk = local.max_length, chunk
        self.chunked, self.queries = local.chunked, False  # for_queries: the actors read texts as queries
        self._query_reader = local.for_queries() is not local
        self._count_tokens = local.token_counter()
        actor = ray.remote(num_cpus=threads_per_worker, max_restarts=RAY_RETRIES, max_task_retries=RAY_RETRIES)(
            _EmbedActor
        )
        recipe_dict = self.recipe.to_dict()
        self.actors = [actor.remote(recipe_dict, threads_per_worker, trust_remote_code) for _ in range(workers)]
        self.pool = ActorPool(self.actors)

    def token_counter(self) -> TokenCounter:
        return self._count_tokens

    def for_thread(self) -> RayEmbedder:
        """The actor pool is not shared by threads: one caller at a time."""
        raise BertlensError("--engine ray serves one caller at a time; it cannot back several server workers")

    def for_queries(self) -> RayEmbedder:
        if not self._query_reader:
            return self
        twin = copy.copy(self)
        twin.chunked, twin.queries = False, True
        return twin

    def _parts(self, texts: Sequence[str]) -> list[list[str]]:
        size = max(1, min(self.chunk, -(-len(texts) // len(self.actors))))  # every actor gets a part of a shard
        return [list(texts[i : i + size]) for i in range(0, len(texts), size)]

    def embed_chunks(self, texts: Sequence[str], progress: Progress = silent) -> ChunkEmbeddings:
        if not self.chunked:
            return super().embed_chunks(texts, progress)  # refuses: this recipe keeps one vector per text
        parts, first = [], 0
        for part, size in zip(
            self.pool.map(lambda actor, chunk: actor.embed_chunks.remote(chunk), (batches := self._parts(texts))),
            (len(b) for b in batches),
            strict=True,
        ):  # in order
            parts.append(ChunkEmbeddings(part.vectors, part.owner + first, part.chunk, part.characters))
            first += size
            progress("embedding", first, len(texts))
        return ChunkEmbeddings(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in ChunkEmbeddings.__dataclass_fields__)
        )

    def embed(self, texts: Sequence[str], progress: Progress = silent) -> Embeddings:
        if self.chunked:
            raise chunked_refusal(self.recipe)
        chunks = self._parts(texts)
        parts, done, truncated = [], 0, 0
        for part in self.pool.map(lambda actor, chunk: actor.embed.remote(chunk, self.queries), chunks):  # in order
            parts.append(part.vectors)
            truncated += part.truncated
            done += len(part.vectors)
            progress("embedding", done, len(texts))
        vectors = np.concatenate(parts) if parts else np.zeros((0, self.dim), dtype=np.float32)
        return Embeddings(vectors, truncated)
