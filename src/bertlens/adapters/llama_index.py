"""A recipe as a LlamaIndex `BaseEmbedding` (texts with the document prompt, queries with the query prompt).
`pip install llama-index-core`; the `fingerprint` field names the recipe."""

from __future__ import annotations

from bertlens.extras import require

require("frameworks", "bertlens.adapters.llama_index")

from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.bridge.pydantic import PrivateAttr  # noqa: E402

from bertlens.adapters.roles import RecipeLike, RoleEncoders  # noqa: E402


class BertlensEmbedding(BaseEmbedding):
    """`BertlensEmbedding("out/search/recipe.json")` as `embed_model=` of a LlamaIndex index."""

    fingerprint: str = ""
    _roles: RoleEncoders = PrivateAttr()

    def __init__(self, recipe: RecipeLike = None, *, encoder=None, **kwargs):
        roles = RoleEncoders(recipe, encoder=encoder)
        super().__init__(model_name=roles.encoder.recipe.model, fingerprint=roles.fingerprint, **kwargs)
        self._roles = roles

    @classmethod
    def class_name(cls) -> str:
        return "BertlensEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._roles.queries([query])[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._roles.documents([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._roles.documents(texts).tolist()
