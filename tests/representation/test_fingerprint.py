"""A recipe's fingerprint: what changes a vector changes it, what does not leaves it; a multi-vector recipe's first
stage is part of it (its own fingerprint, its fitted files by their bytes)."""

from __future__ import annotations

import pytest

from bertlens.errors import BertlensError
from bertlens.representation.fingerprint import recipe_fingerprint
from bertlens.representation.recipe import Recipe


def test_what_changes_a_vector_changes_the_fingerprint_and_nothing_else_does():
    base = recipe_fingerprint(Recipe(), "weights")
    assert recipe_fingerprint(Recipe(pooler="cls"), "weights") != base
    assert recipe_fingerprint(Recipe(), "other weights") != base
    assert recipe_fingerprint(Recipe(precision="bf16", model="elsewhere"), "weights") == base  # same weights


def test_a_first_stage_is_part_of_a_multi_vector_recipes_fingerprint(tmp_path):
    tokens = Recipe(pooler="tokens")
    alone = recipe_fingerprint(tokens, "weights")
    mean = recipe_fingerprint(tokens.replace(first_stage=Recipe()), "weights")
    cls = recipe_fingerprint(tokens.replace(first_stage=Recipe(pooler="cls")), "weights")
    deeper = recipe_fingerprint(tokens.replace(first_stage=Recipe(), rerank_depth=200), "weights")
    assert len({alone, mean, cls}) == 3 and deeper == mean  # how deep it re-ranks is chosen at search time
    (tmp_path / "a.safetensors").write_bytes(b"one")
    (tmp_path / "b.safetensors").write_bytes(b"two")
    with_post = [
        recipe_fingerprint(tokens.replace(first_stage=Recipe(postprocess=str(tmp_path / name))), "weights")
        for name in ("a.safetensors", "b.safetensors")
    ]
    assert with_post[0] != with_post[1]  # the first stage's post-processor by its bytes
    with pytest.raises(BertlensError, match="post-processor .* does not exist"):
        recipe_fingerprint(tokens.replace(first_stage=Recipe(postprocess=str(tmp_path / "gone"))), "weights")
