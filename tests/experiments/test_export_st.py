"""sentence-transformers export: loaded by SentenceTransformer itself (no bertlens code), it reproduces the recipe
within 1e-5; what it cannot express is refused with the part named."""

from __future__ import annotations

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from bertlens.embedding.embedder import Embedder
from bertlens.errors import BertlensError
from bertlens.experiments.export_st import run_export_sentence_transformers
from bertlens.representation.postprocess import PostProcessor
from bertlens.representation.recipe import Recipe

TEXTS = ["a", "the cat sat on the mat", "a much longer sentence with several clauses, commas and numbers 1 2 3"] * 2


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"layers": (1,), "pooler": "cls"},
        {
            "layers": (0, 1, 2),
            "mixer": "scalar_mix",
            "mix_weights": (0.2, -0.4, 0.7),
            "mix_gamma": 1.6,
            "pooler": "max",
        },
        {"layers": (1, 2), "mixer": "sum", "normalize": True},
        {"mixer": "first_last"},
        {"postprocess": "LINEAR"},
    ],
    ids=["last-mean", "middle-cls", "scalar_mix-max", "sum-normalized", "first_last", "projection"],
)
def test_sentence_transformers_reproduces_the_recipe(tiny_bert_dir, tmp_path, changes):
    if changes.get("postprocess") == "LINEAR":
        rng = np.random.default_rng(0)
        path = PostProcessor.affine(rng.normal(size=(32, 8)), rng.normal(size=8), normalize=True).save(
            tmp_path / "p.safetensors"
        )
        changes = {"postprocess": str(path)}
    recipe = Recipe(model=str(tiny_bert_dir), **changes)
    run_export_sentence_transformers(recipe, tmp_path / "st", TEXTS[:3], "t")
    got = SentenceTransformer(str(tmp_path / "st"), device="cpu").encode(TEXTS, convert_to_numpy=True)
    np.testing.assert_allclose(got, Embedder(recipe).encode(TEXTS), atol=1e-5)


@pytest.mark.parametrize(
    ("changes", "part"),
    [
        ({"layers": (-2, -1), "mixer": "concat"}, "concatenation"),
        ({"pooler": "attention"}, "'attention' pooler"),
        ({"include_special": False}, "without \\[CLS\\]"),
        ({"long_text": "windows"}, "several passes"),
    ],
)
def test_what_sentence_transformers_cannot_express_is_refused(tiny_bert_dir, tmp_path, changes, part):
    with pytest.raises(BertlensError, match=f"cannot express .*{part}.*bertlens distill"):
        run_export_sentence_transformers(Recipe(model=str(tiny_bert_dir), **changes), tmp_path / "st", TEXTS, "t")
    assert not any(tmp_path.iterdir())


def test_the_recipe_prompts_become_sentence_transformers_prompts(tiny_bert_dir, tmp_path):
    from bertlens.embedding.prompted import with_role

    recipe = Recipe(model=str(tiny_bert_dir), query_prompt="query: ", document_prompt="passage: ")
    record = run_export_sentence_transformers(recipe, tmp_path / "st", TEXTS[:3], "t")
    assert record["prompts"] == {"query": "query: ", "document": "passage: "}
    model = SentenceTransformer(str(tmp_path / "st"), device="cpu")
    embedder = Embedder(recipe)
    for role in ("query", "document"):
        got = model.encode(TEXTS, convert_to_numpy=True, prompt_name=role)
        np.testing.assert_allclose(got, with_role(embedder, role).encode(TEXTS), atol=1e-5)
    assert not np.allclose(model.encode(TEXTS, prompt_name="query"), model.encode(TEXTS, prompt_name="document"))


@pytest.mark.parametrize(
    "changes",
    [{}, {"include_special": False, "drop_punctuation": True, "query_augment": 12, "token_projection": "RANDOM"}],
    ids=["last-layer-tokens", "colbert-choices"],
)
def test_a_multi_vector_recipe_exports_to_a_multi_vector_encoder(tiny_bert_dir, tmp_path, changes):
    from sentence_transformers import MultiVectorEncoder

    from bertlens.representation.token_projection import random_projection

    if changes.get("token_projection") == "RANDOM":
        changes = {**changes, "token_projection": str(random_projection(32, 8).save(tmp_path / "p.safetensors"))}
    recipe = Recipe(model=str(tiny_bert_dir), pooler="tokens", layers=(1,), **changes)
    record = run_export_sentence_transformers(recipe, tmp_path / "st", TEXTS[:3], "t")
    assert record["parity"]["max_abs_diff"] < 1e-5
    assert ("MultiVectorMask" in record["modules"]) == bool(changes)  # the filters, as masks
    loaded = MultiVectorEncoder(str(tmp_path / "st"), device="cpu")
    embedder = Embedder(recipe)
    queries = loaded.encode_query(TEXTS[:3], convert_to_numpy=True)
    ours = embedder.for_queries().embed_tokens(TEXTS[:3])
    for i, got in enumerate(queries):
        mine = ours.of(i) / np.linalg.norm(ours.of(i), axis=1, keepdims=True)
        np.testing.assert_allclose(np.asarray(got), mine, atol=1e-5)


def test_a_first_stage_recipe_exports_its_token_reading_and_says_the_first_stage_is_not_in_it(
    tiny_bert_dir, tmp_path, capsys
):
    from bertlens.cli.main import main

    first = Recipe(model=str(tiny_bert_dir), pooler="cls")
    recipe = Recipe(model=str(tiny_bert_dir), pooler="tokens", layers=(1,), first_stage=first).save(tmp_path / "r.json")
    code = main(["export", "--format", "sentence-transformers", "--recipe", str(recipe), "--out", str(tmp_path / "st"),
                 "--quiet"])  # fmt: skip
    out = capsys.readouterr().err
    assert code == 0 and "first stage (pooler 'cls', top 100 re-ranked) is not part of the MultiVectorEncoder" in out
    assert "MultiVectorEncoder('" in out


def test_an_onnx_export_of_a_multi_vector_recipe_is_one_line_naming_the_export_that_works(
    tiny_bert_dir, tmp_path, capsys
):
    from bertlens.cli.main import main

    recipe = Recipe(model=str(tiny_bert_dir), pooler="tokens", layers=(1,)).save(tmp_path / "r.json")
    code = main(["export", "--format", "onnx", "--recipe", str(recipe), "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "exports with --format sentence-transformers" in err[0]
    assert not (tmp_path / "x").exists()
