"""A recipe's fingerprint: what makes two vectors comparable, as one short hash.

An index stores it next to its vectors, and a search refuses a query embedded under another one: the same
model weights (the model's own fingerprint, not its path, so a copied model matches), the same layers,
mixing, pooling, prompts, length handling and fitted post-processing (by the file's bytes, not its name).
Left out on purpose: the encoding precision (bf16 and fp32 vectors of one recipe agree to a cosine of 0.9999
and are searched together), the measured dimension losses (a record of the recipe, not a part of it) and how deep
a multi-vector recipe re-ranks its first stage (a choice at search time over the same vectors).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from bertlens.errors import BertlensError
from bertlens.io.cache import content_key
from bertlens.representation.recipe import Recipe

IGNORED = ("model", "precision", "dimension_loss", "postprocess", "token_projection", "rerank_depth", "schema_version")


def recipe_fingerprint(recipe: Recipe, model_fingerprint: str) -> str:
    """16 hex digits over the model's fingerprint and every field that changes a vector."""
    settings = {name: value for name, value in recipe.to_dict().items() if name not in IGNORED}
    digests = [_file_digest(recipe.postprocess, "post-processor")]
    if recipe.token_projection:  # absent for every other recipe, so their fingerprints read as before
        digests.append(_file_digest(recipe.token_projection, "token projection"))
    if recipe.first_stage is not None:  # the first stage's own fingerprint (same model), its files digested
        settings["first_stage"] = recipe_fingerprint(recipe.first_stage, model_fingerprint)
    return content_key([model_fingerprint, settings, *digests])


def _file_digest(path: str | None, what: str) -> str | None:
    if path is None:
        return None
    file = Path(path)
    if not file.is_file():
        raise BertlensError(f"the recipe's {what} {path} does not exist; restore it or refit the recipe")
    return hashlib.sha256(file.read_bytes()).hexdigest()
