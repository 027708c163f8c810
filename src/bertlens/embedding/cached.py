"""A recipe's vectors for a list of texts, computed once and kept in the content-addressed cache.

Used where the same vectors are needed again by a later run (a distillation teacher's targets: a
resumed or repeated run must not pay for the teacher twice). The key covers the recipe, the model's
fingerprint, the post-processor file's checksum and every text, so any change recomputes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

from bertlens.embedding.embedder import Embedder
from bertlens.io.cache import content_key, file_sha256, open_entry, publish, staging_dir
from bertlens.progress import Progress, silent

VECTORS_VERSION = 1


def vectors_key(embedder: Embedder, texts: Sequence[str]) -> str:
    recipe = embedder.recipe
    postprocess = file_sha256(Path(recipe.postprocess)) if recipe.postprocess else None
    return content_key(
        ["vectors", VECTORS_VERSION, recipe.to_dict(), embedder.encoder.ref.fingerprint, postprocess], texts
    )


def cached_vectors(
    embedder: Embedder, texts: Sequence[str], cache_dir: Path, progress: Progress = silent
) -> np.ndarray:
    """`embedder.encode(texts)` [N, D] float32, read from `cache_dir/vectors/KEY` when a verified entry exists."""
    final = cache_dir / "vectors" / vectors_key(embedder, texts)
    if open_entry(final, "vectors") is not None:
        return load_file(str(final / "vectors.safetensors"))["vectors"]
    vectors = embedder.encode(texts, progress)
    tmp = staging_dir(final)
    save_file({"vectors": np.ascontiguousarray(vectors)}, str(tmp / "vectors.safetensors"))
    publish(tmp, final, {"texts": len(texts), "dim": int(vectors.shape[1]), "model": embedder.encoder.ref.name})
    return vectors
