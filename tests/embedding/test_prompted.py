import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.prompted import Prompted, with_role
from bertlens.errors import BertlensError
from bertlens.representation.recipe import Recipe


def test_a_role_puts_its_prompt_before_every_text(tiny_bert_dir):
    embedder = Embedder(Recipe(model=str(tiny_bert_dir), query_prompt="query: ", document_prompt="passage: "))
    texts = ["how tall is it", "a tower"]
    queries = with_role(embedder, "query")
    np.testing.assert_array_equal(queries.encode(texts), embedder.encode(["query: " + t for t in texts]))
    np.testing.assert_array_equal(
        with_role(embedder, "document").for_thread().encode(texts), embedder.encode(["passage: " + t for t in texts])
    )
    assert queries.token_counter()(["x"]) == embedder.token_counter()(["query: x"])
    assert with_role(embedder, None) is embedder


def test_a_role_without_a_prompt_changes_nothing(tiny_bert_dir):
    embedder = Embedder(Recipe(model=str(tiny_bert_dir), query_prompt="query: "))
    assert with_role(embedder, "document") is embedder
    assert isinstance(with_role(embedder, "query"), Prompted)


def test_prompts_round_trip_in_a_recipe_and_are_typed(tmp_path):
    recipe = Recipe(query_prompt="Represent this question: ", document_prompt="")
    assert Recipe.load(recipe.save(tmp_path / "r.json")) == recipe
    with pytest.raises(BertlensError, match="field 'query_prompt' must be"):
        Recipe.from_dict({**recipe.to_dict(), "query_prompt": 3})
    with pytest.raises(BertlensError, match="unknown role 'querry'"):
        recipe.prompt("querry")
