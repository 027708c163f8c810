"""A multi-vector recipe (pooler 'tokens'): the Embedder gives every kept token's vector, as the sweep's token bank
read them; queries are augmented and keep their punctuation, documents drop it; `embed` writes a Parquet list
column (or .npy with offsets); what a pooled route cannot do is refused in one line."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.prompted import with_role
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.features.token_bank import build_token_bank
from bertlens.representation.recipe import Recipe
from bertlens.representation.token_projection import random_projection

TEXTS = ["wings, lift and drag!", "a much longer note about engines; thrust and fuel flow at altitude", "rain"]


def _recipe(tiny_bert_dir, **changes) -> Recipe:
    return Recipe(model=str(tiny_bert_dir), pooler="tokens", layers=(2,), precision="fp32", **changes)


def test_document_tokens_are_the_token_banks_and_the_filters_drop_what_they_say(tiny_bert_dir, tmp_path):
    recipe = _recipe(tiny_bert_dir, include_special=False, drop_punctuation=True)
    embedder = Embedder(recipe)
    tokens = embedder.embed_tokens(TEXTS)
    bank = build_token_bank(Encoder(str(tiny_bert_dir), precision="fp32"), TEXTS, tmp_path, (2,))
    expected = bank.tokens(2, drop_special=True, drop_punctuation=True)
    np.testing.assert_array_equal(tokens.offsets, expected.offsets)
    np.testing.assert_allclose(tokens.vectors, np.asarray(expected.vectors, dtype=np.float32), atol=2e-3)  # f16
    assert embedder.dim == 32 and tokens.vectors.dtype == np.float32
    with pytest.raises(BertlensError, match="keeps every token's vector"):
        embedder.encode(TEXTS)


def test_queries_are_padded_with_masks_and_keep_their_punctuation(tiny_bert_dir):
    recipe = _recipe(tiny_bert_dir, drop_punctuation=True, query_augment=10)
    embedder = Embedder(recipe)
    queries = with_role(embedder, "query")
    assert queries.reads_queries and not embedder.reads_queries
    tokens = queries.embed_tokens(TEXTS)
    lengths = np.diff(tokens.offsets)
    assert lengths[0] == 10 and lengths[2] == 10  # short queries padded to 10 tokens
    assert lengths[1] > 10  # a longer one is kept whole
    documents = np.diff(embedder.embed_tokens(TEXTS).offsets)
    assert documents[0] < len(Encoder(str(tiny_bert_dir)).tokenize(TEXTS[:1]).input_ids[0])  # ',' and '!' dropped


def test_a_projection_reduces_every_token(tiny_bert_dir, tmp_path):
    path = random_projection(32, 8, seed=0).save(tmp_path / "p.safetensors")
    embedder = Embedder(_recipe(tiny_bert_dir, token_projection=str(path)))
    plain = Embedder(_recipe(tiny_bert_dir)).embed_tokens(TEXTS)
    reduced = embedder.embed_tokens(TEXTS)
    assert embedder.dim == 8 and reduced.vectors.shape == (len(plain.vectors), 8)
    np.testing.assert_allclose(reduced.vectors, plain.vectors @ random_projection(32, 8, seed=0).components, atol=1e-5)


def test_embed_writes_a_list_column_per_text_and_npy_with_offsets(tiny_bert_dir, tmp_path):
    from bertlens.api.embed import embed

    recipe = _recipe(tiny_bert_dir).save(tmp_path / "recipe.json")
    embed(TEXTS, recipe=recipe, out=tmp_path / "v.parquet")
    table = pq.read_table(tmp_path / "v.parquet")
    expected = Embedder(Recipe.load(recipe)).embed_tokens(TEXTS)
    rows = table.column("embedding").to_pylist()
    assert len(rows) == 3 and [len(r) for r in rows] == list(np.diff(expected.offsets))
    np.testing.assert_allclose(np.array(rows[1]), expected.of(1), atol=1e-6)
    embed(TEXTS, recipe=recipe, out=tmp_path / "v.npy")
    offsets = np.load(tmp_path / "v.offsets.npy")
    np.testing.assert_array_equal(offsets, expected.offsets)
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), expected.vectors, atol=1e-6)


def test_a_multi_vector_recipe_that_reads_roles_differently_needs_a_role(tiny_bert_dir, tmp_path):
    from bertlens.api.embed import embed
    from bertlens.errors import OptionError

    recipe = _recipe(tiny_bert_dir, query_augment=8).save(tmp_path / "recipe.json")
    with pytest.raises(OptionError, match="reads queries and documents differently"):
        embed(TEXTS, recipe=recipe, out=tmp_path / "v.parquet")
    assert not (tmp_path / "v.parquet").exists()


def test_a_multi_vector_recipe_refuses_what_only_pooled_recipes_do():
    with pytest.raises(BertlensError, match="reads one layer"):
        Recipe(pooler="tokens", mixer="concat", layers=(1, 2))
    with pytest.raises(BertlensError, match="'query_augment' applies to a multi-vector recipe"):
        Recipe(pooler="mean", query_augment=32)
    with pytest.raises(BertlensError, match="leave postprocess and long_text empty"):
        Recipe(pooler="tokens", long_text="windows")
    pooled = Recipe().to_dict()
    assert "query_augment" not in pooled and "token_projection" not in pooled  # pooled recipes read as before
    tokens = Recipe(pooler="tokens", query_augment=32, drop_punctuation=True)
    assert Recipe.from_json(tokens.to_json()) == tokens


@pytest.mark.parametrize(
    "tokens, first",
    [
        ({"include_special": False, "drop_punctuation": True}, {"pooler": "mean", "normalize": True}),
        ({"query_augment": 10}, {"pooler": "attention"}),  # augmented queries: their own pass
        ({"query_prompt": "q: "}, {"pooler": "cls", "query_prompt": "search: "}),  # other prompts: their own pass
    ],
    ids=["one-pass", "augmented-queries", "own-prompts"],
)
def test_a_first_stage_recipe_reads_both_ways_as_each_reading_alone(tiny_bert_dir, tokens, first):
    """One forward pass or two, `embed_both` gives what the token reading and the first stage give on their own."""
    pooled = Recipe(model=str(tiny_bert_dir), layers=(1,), precision="fp32", **first)
    recipe = _recipe(tiny_bert_dir, first_stage=pooled, **tokens)
    embedder = Embedder(recipe)
    alone = Embedder(pooled)
    for role in ("query", "document"):
        got_tokens, got_pooled = embedder.embed_both(TEXTS, role)
        expected = with_role(embedder, role).embed_tokens(TEXTS)
        np.testing.assert_array_equal(got_tokens.offsets, expected.offsets)
        np.testing.assert_allclose(got_tokens.vectors, expected.vectors, atol=1e-6)
        np.testing.assert_allclose(got_pooled, with_role(alone, role).encode(TEXTS), atol=1e-6)
    with pytest.raises(BertlensError, match="embed_both is for a multi-vector recipe with a first_stage"):
        Embedder(_recipe(tiny_bert_dir)).embed_both(TEXTS, "query")
