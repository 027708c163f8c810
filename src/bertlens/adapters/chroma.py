"""A recipe as a Chroma `EmbeddingFunction`: documents with the document prompt, `embed_query` with the query
prompt; its config (the recipe and fingerprint) is stored with the collection, so Chroma can rebuild it."""

from __future__ import annotations

import json

from bertlens.extras import require

require("stores", "bertlens.adapters.chroma")

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings  # noqa: E402

from bertlens.adapters.roles import RecipeLike, RoleEncoders  # noqa: E402
from bertlens.representation.recipe import Recipe  # noqa: E402


class BertlensEmbeddingFunction(EmbeddingFunction[Documents]):
    """`collection = client.create_collection("docs", embedding_function=BertlensEmbeddingFunction("recipe.json"))`."""

    def __init__(self, recipe: RecipeLike = None, *, encoder=None):
        self._roles = RoleEncoders(recipe, encoder=encoder)
        self.fingerprint = self._roles.fingerprint

    def __call__(self, input: Documents) -> Embeddings:
        return list(self._roles.documents(list(input)))

    def embed_query(self, input: Documents) -> Embeddings:
        return list(self._roles.queries(list(input)))

    @staticmethod
    def name() -> str:
        return "bertlens"

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine", "ip", "l2"]

    def get_config(self) -> dict:
        return {"recipe": self._roles.encoder.recipe.to_json(), "fingerprint": self.fingerprint}

    @staticmethod
    def build_from_config(config: dict) -> BertlensEmbeddingFunction:
        return BertlensEmbeddingFunction(Recipe.from_json(config["recipe"], "the collection's embedding function"))

    @staticmethod
    def validate_config(config: dict) -> None:
        json.loads(config["recipe"])

    def validate_config_update(self, old_config: dict, new_config: dict) -> None:
        if old_config.get("fingerprint") != new_config.get("fingerprint"):
            raise ValueError("a collection's recipe cannot change: its vectors were made with the old one")
