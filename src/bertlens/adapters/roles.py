"""What every framework adapter shares: a recipe's encoder, its query and document roles, and its fingerprint.

Retrieval recipes may put a prompt before queries and another before documents (E5's "query: " /
"passage: "); frameworks call separate methods for the two, so each adapter maps them to the roles here.
The fingerprint (representation/fingerprint.py) travels with every adapter, so an application can check that
the vectors in its store and the queries it embeds come from the same recipe.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from bertlens.embedding.backends import BackendSpec, make_encoder
from bertlens.embedding.prompted import with_role
from bertlens.embedding.protocol import TextEncoder
from bertlens.errors import BertlensError
from bertlens.representation.fingerprint import recipe_fingerprint
from bertlens.representation.recipe import Recipe

RecipeLike = Recipe | str | os.PathLike | None


def as_recipe(recipe: RecipeLike) -> Recipe:
    """A Recipe, a recipe.json path, or None for the default model's recipe."""
    if recipe is None or isinstance(recipe, Recipe):
        return recipe or Recipe(precision="auto")
    path = os.fspath(recipe)
    if not os.path.isfile(path):
        raise BertlensError(f"recipe {path} does not exist; give a recipe.json (bertlens sweep writes one)")
    with open(path, encoding="utf-8") as handle:
        return Recipe.from_json(handle.read(), path)


class RoleEncoders:
    """`RoleEncoders(recipe).documents(texts)` / `.query(text)`: float32 vectors with the recipe's role prompts."""

    def __init__(self, recipe: RecipeLike = None, *, encoder: TextEncoder | None = None):
        self.encoder = encoder if encoder is not None else make_encoder(BackendSpec("torch", as_recipe(recipe)))
        self.fingerprint = recipe_fingerprint(self.encoder.recipe, self.encoder.fingerprint)
        self.dim = self.encoder.dim
        self._documents = with_role(self.encoder, "document")
        self._queries = with_role(self.encoder, "query")

    def documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._documents.encode(list(texts)) if len(texts) else np.zeros((0, self.dim), np.float32)  # [N, D]

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._queries.encode(list(texts)) if len(texts) else np.zeros((0, self.dim), np.float32)  # [N, D]
