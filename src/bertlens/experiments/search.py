"""`bertlens search`: queries embedded with the index's own recipe and role, searched, chunks joined into documents.

The index's record names the recipe its vectors came from. A search builds its encoder from that recipe
(or from `--recipe`, which must carry the same fingerprint: a query embedded another way would be compared
with vectors it does not share a space with). A document scores its best row (MaxP; Dai & Callan 2019), so
a document of one vector scores that vector; rows are fetched until k distinct documents are found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bertlens.embedding.prompted import with_role
from bertlens.embedding.protocol import TextEncoder
from bertlens.errors import BertlensError, OptionError, literal
from bertlens.representation.fingerprint import recipe_fingerprint
from bertlens.representation.recipe import Recipe
from bertlens.stores.protocol import VectorStore
from bertlens.stores.rows import Hit, IndexRecord


@dataclass(frozen=True)
class DocumentHit:
    """A document found for a query: its score (its best row's cosine) and that row's span and text."""

    doc_id: str
    score: float
    chunk: int
    start: int
    end: int
    text: str


def stored_record(store: VectorStore) -> IndexRecord:
    record = store.record()
    if record is None:
        raise BertlensError(f"store {store.where} holds no bertlens index; make one with `bertlens index`")
    return record


def index_recipe(record: IndexRecord, where: str) -> Recipe:
    return Recipe.from_json(record.recipe_json, f"the index record of {where}")


def check_encoder(encoder: TextEncoder, record: IndexRecord, where: str) -> None:
    """One line when the encoder's recipe is not the index's (another model, layer, pooling, prompt, ...)."""
    fingerprint = recipe_fingerprint(encoder.recipe, encoder.fingerprint)
    if fingerprint != record.fingerprint:
        fix = (
            f"the index was made from the ONNX export {literal(record.export_dir)}: leave out {{backend}} and {{recipe}}"
            if record.export_dir
            else "leave out {recipe} to use the index's own"
        )
        raise OptionError(
            f"the query recipe's fingerprint {fingerprint} is not the index's {record.fingerprint} ({literal(where)}): "
            f"queries must be embedded with the recipe the documents were; {fix}",
            "backend",
            "recipe",
        )


def documents_of(hits: Sequence[Hit], k: int) -> list[DocumentHit]:
    """The first k distinct documents of rows ranked best first: each with its best row (MaxP)."""
    out: dict[str, DocumentHit] = {}
    for hit in hits:
        if hit.doc_id not in out:
            out[hit.doc_id] = DocumentHit(hit.doc_id, hit.score, hit.chunk, hit.start, hit.end, hit.text)
            if len(out) == k:
                break
    return list(out.values())


def search_store(
    store: VectorStore, encoder: TextEncoder, queries: Sequence[str], k: int, *, exact: bool = True
) -> list[list[DocumentHit]]:
    """Top k documents per query, best first (ties: the store's order)."""
    if k < 1:
        raise OptionError(f"{{top_k}} must be at least 1, got {k}", "top_k")
    if not queries:
        raise OptionError("no query to search: give {query} or {queries}", "query", "queries")
    if getattr(encoder, "multi_vector", False):  # a multi-vector index: MaxSim over each document's tokens
        if getattr(encoder, "first_stage", None) is None:  # every document scored
            tokens = with_role(encoder, "query").embed_tokens(list(queries))  # [T, D] with offsets [Q+1]
            return [documents_of(hits, k) for hits in store.search_tokens(tokens, k)]
        tokens, pooled = encoder.embed_both(list(queries), "query")  # and the first stage's [Q, D1]
        found = store.rerank_tokens(pooled, tokens, k, encoder.recipe.rerank_depth, exact)
        return [documents_of(hits, k) for hits in found]
    vectors = with_role(encoder, "query").encode(list(queries))  # [Q, D]
    rows = store.count()
    found = [documents_of(hits, k) for hits in store.search(vectors, min(k, rows), exact)]
    for i, vector in enumerate(vectors):
        fetch = k
        while len(found[i]) < k and fetch < rows:  # chunk rows of the same documents filled the fetch: fetch more
            fetch = min(rows, fetch * 4)
            found[i] = documents_of(store.search(vector[None, :], fetch, exact)[0], k)
    return found


class SearchIndex:
    """The Python API: `open_index("store/").search(["a query"], k=10)`, or `SearchIndex(store, encoder)` with an
    encoder of your own (refused when its fingerprint is not the index's)."""

    def __init__(self, store: VectorStore, encoder: TextEncoder) -> None:
        self.store, self.encoder = store, encoder
        self.record = stored_record(store)
        check_encoder(encoder, self.record, store.where)

    def search(self, queries: Sequence[str], k: int = 10, exact: bool = True) -> list[list[DocumentHit]]:
        return search_store(self.store, self.encoder, queries, k, exact=exact)


def open_index(
    where: str,
    *,
    recipe: Path | None = None,
    backend: str | None = None,
    model_dir: str | Path | None = None,
    device: str = "cpu",
) -> SearchIndex:
    """The index at `where` (a LanceDB directory or a server URI) with the encoder that made it: an index made from
    an ONNX export loads that export (or `model_dir`, another copy of it), any other is embedded by PyTorch from
    the index's recipe (or `recipe`, which must carry the same fingerprint)."""
    from bertlens.embedding.backends import BackendSpec, make_encoder
    from bertlens.stores.open import open_store

    store = open_store(where)
    record = stored_record(store)
    backend = backend or ("onnx" if record.export_dir else "torch")
    if backend != "torch":
        if recipe is not None:
            raise OptionError(f"{{backend}} {backend} runs the recipe baked into the export; leave out {{recipe}}",
                              "backend", "recipe")  # fmt: skip
        directory = model_dir or record.export_dir
        if directory is None or not Path(directory).is_dir():
            made = f"; the index was made from {record.export_dir}, which is gone" if record.export_dir else ""
            raise OptionError(
                f"{{backend}} {backend} needs {{model}}, a directory from `bertlens export`{literal(made)}",
                "backend",
                "model",
            )
        spec = BackendSpec(backend, model_dir=directory)
    else:
        if model_dir is not None:
            raise OptionError("{model} names an export: use it with {backend} onnx or openvino (or give {recipe})",
                              "model", "backend", "recipe")  # fmt: skip
        spec = BackendSpec(backend, recipe_for(record, store.where, recipe), device=device)
    return SearchIndex(store, make_encoder(spec))


def recipe_for(record: IndexRecord, where: str, given: Path | None) -> Recipe:
    """The recipe to embed queries with: `given` (checked against the index once its model is loaded) or the
    index's own."""
    return Recipe.from_json(given.read_text(encoding="utf-8"), str(given)) if given else index_recipe(record, where)
