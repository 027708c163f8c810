"""A recipe in LanceDB's embedding registry, as "bertlens": `get_registry().get("bertlens").create(recipe=PATH)`.
Source texts get the document prompt, queries the query prompt; `.fingerprint()` names the recipe."""

from __future__ import annotations

from bertlens.extras import require

require("stores", "bertlens.adapters.lancedb")

from lancedb.embeddings import TextEmbeddingFunction, register  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

from bertlens.adapters.roles import RoleEncoders  # noqa: E402


@register("bertlens")
class BertlensLanceEmbeddings(TextEmbeddingFunction):
    recipe: str | None = None  # a recipe.json path (None: the default model's recipe)
    _roles: RoleEncoders | None = PrivateAttr(default=None)

    def _encoders(self) -> RoleEncoders:
        if self._roles is None:
            self._roles = RoleEncoders(self.recipe)
        return self._roles

    def ndims(self) -> int:
        return self._encoders().dim

    def fingerprint(self) -> str:
        return self._encoders().fingerprint

    def generate_embeddings(self, texts, *args, **kwargs):
        return list(self._encoders().documents(list(texts)))

    def compute_query_embeddings(self, query: str, *args, **kwargs):
        return list(self._encoders().queries([query]))
