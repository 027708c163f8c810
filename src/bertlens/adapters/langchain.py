"""A recipe as a LangChain `Embeddings`: `embed_documents` with the document prompt, `embed_query` with the query
prompt. `pip install langchain-core`; `.fingerprint` names the recipe."""

from __future__ import annotations

from bertlens.extras import require

require("frameworks", "bertlens.adapters.langchain")

from langchain_core.embeddings import Embeddings  # noqa: E402

from bertlens.adapters.roles import RecipeLike, RoleEncoders  # noqa: E402


class BertlensEmbeddings(Embeddings):
    """`BertlensEmbeddings("out/search/recipe.json")`, or `encoder=` any bertlens TextEncoder."""

    def __init__(self, recipe: RecipeLike = None, *, encoder=None):
        self._roles = RoleEncoders(recipe, encoder=encoder)
        self.fingerprint = self._roles.fingerprint

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._roles.documents(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._roles.queries([text])[0].tolist()
