"""The framework adapters against the installed libraries: each embeds documents and queries with the recipe's
own prompts (equal to bertlens' vectors), carries the recipe's fingerprint, and works inside its framework."""

import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.representation.fingerprint import recipe_fingerprint
from bertlens.representation.recipe import Recipe

DOCS = ["a note about cats and kittens", "stock markets fell today", "heavy rain and strong wind", "the moon rises"]


@pytest.fixture(scope="module")
def prompted(default_model_dir, tmp_path_factory):
    recipe = Recipe(model=str(default_model_dir), precision="fp32", query_prompt="query: ", document_prompt="passage: ")
    path = recipe.save(tmp_path_factory.mktemp("recipe") / "recipe.json")
    embedder = Embedder(recipe)
    return path, embedder, recipe_fingerprint(embedder.recipe, embedder.fingerprint)


def expected(embedder, texts, prompt):
    return embedder.encode([prompt + t for t in texts])


def test_langchain_embeddings_use_the_roles_and_search_in_langchain(prompted):
    pytest.importorskip("langchain_core")
    from langchain_core.vectorstores import InMemoryVectorStore

    from bertlens.adapters.langchain import BertlensEmbeddings

    path, embedder, fingerprint = prompted
    embeddings = BertlensEmbeddings(path)
    assert embeddings.fingerprint == fingerprint
    np.testing.assert_allclose(embeddings.embed_documents(DOCS), expected(embedder, DOCS, "passage: "), atol=1e-5)
    np.testing.assert_allclose(
        embeddings.embed_query("the moon"), expected(embedder, ["the moon"], "query: ")[0], atol=1e-5
    )
    store = InMemoryVectorStore.from_texts(DOCS, embeddings)
    assert store.similarity_search("kittens", k=1)[0].page_content == DOCS[0]


def test_llama_index_embedding_uses_the_roles_and_retrieves(prompted):
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex

    from bertlens.adapters.llama_index import BertlensEmbedding

    path, embedder, fingerprint = prompted
    model = BertlensEmbedding(path)
    assert model.fingerprint == fingerprint
    np.testing.assert_allclose(model.get_text_embedding_batch(DOCS), expected(embedder, DOCS, "passage: "), atol=1e-5)
    np.testing.assert_allclose(model.get_query_embedding("rain"), expected(embedder, ["rain"], "query: ")[0], atol=1e-5)
    index = VectorStoreIndex.from_documents([Document(text=d) for d in DOCS], embed_model=model)
    assert index.as_retriever(similarity_top_k=1).retrieve("falling shares")[0].node.get_content() == DOCS[1]


def test_chroma_embedding_function_uses_the_roles_and_rebuilds_from_its_config(prompted):
    chromadb = pytest.importorskip("chromadb")
    from bertlens.adapters.chroma import BertlensEmbeddingFunction

    path, embedder, fingerprint = prompted
    function = BertlensEmbeddingFunction(path)
    assert function.fingerprint == fingerprint and function.get_config()["fingerprint"] == fingerprint
    np.testing.assert_allclose(np.stack(function(DOCS)), expected(embedder, DOCS, "passage: "), atol=1e-5)
    np.testing.assert_allclose(
        np.stack(function.embed_query(["moon"])), expected(embedder, ["moon"], "query: "), atol=1e-5
    )
    assert BertlensEmbeddingFunction.build_from_config(function.get_config()).fingerprint == fingerprint
    collection = chromadb.EphemeralClient().create_collection("notes", embedding_function=function)
    collection.add(ids=[str(i) for i in range(len(DOCS))], documents=DOCS)
    assert collection.query(query_texts=["wind and storms"], n_results=1)["ids"][0] == ["2"]


def test_lancedb_registry_function_uses_the_roles_and_searches_by_text(prompted, tmp_path):
    lancedb = pytest.importorskip("lancedb")
    from lancedb.embeddings import get_registry
    from lancedb.pydantic import LanceModel, Vector

    import bertlens.adapters.lancedb  # noqa: F401 - registers "bertlens"

    path, embedder, fingerprint = prompted
    function = get_registry().get("bertlens").create(recipe=str(path))
    assert function.fingerprint() == fingerprint and function.ndims() == embedder.dim
    np.testing.assert_allclose(
        np.stack(function.compute_source_embeddings(DOCS)), expected(embedder, DOCS, "passage: "), atol=1e-5
    )
    np.testing.assert_allclose(
        function.compute_query_embeddings("moon")[0], expected(embedder, ["moon"], "query: ")[0], atol=1e-5
    )

    class Note(LanceModel):
        text: str = function.SourceField()
        vector: Vector(function.ndims()) = function.VectorField()

    table = lancedb.connect(str(tmp_path / "db")).create_table("notes", schema=Note)
    table.add([{"text": d} for d in DOCS])
    assert table.search("cats").limit(1).to_pydantic(Note)[0].text == DOCS[0]
