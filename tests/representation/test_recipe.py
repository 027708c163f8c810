import dataclasses
import json
import re

import pytest

from bertlens.errors import BertlensError
from bertlens.representation.recipe import SCHEMA_VERSION, Recipe


def test_json_round_trip(tmp_path):
    recipe = Recipe(
        model="m",
        layers=(-4, -3, -2, -1),
        mixer="scalar_mix",
        pooler="attention",
        mix_weights=(0.1, 0.2, 0.3, 0.4),
        mix_gamma=1.5,
        normalize=True,
        max_length=128,
        precision="bf16",
    )
    assert Recipe.from_json(recipe.to_json()) == recipe
    assert Recipe.load(recipe.save(tmp_path / "r.json")) == recipe
    assert recipe.to_dict()["schema_version"] == SCHEMA_VERSION


def test_recipe_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Recipe().pooler = "cls"


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"pooler": "avg"}, "unknown pooler 'avg'"),
        ({"mixer": "blend"}, "unknown mixer 'blend'"),
        ({"precision": "fp16"}, "unknown precision 'fp16'"),
        ({"layers": (1, 2)}, "'single' takes exactly one layer"),
        ({"mixer": "scalar_mix", "layers": (1, 2), "mix_weights": (1.0,)}, "1 weights for 2 layers"),
        ({"max_length": 1}, "max_length 1"),
    ],
)
def test_invalid_recipes_are_rejected(fields, message):
    with pytest.raises(BertlensError, match=message):
        Recipe(**fields)


def test_json_errors_name_the_problem():
    with pytest.raises(BertlensError, match="schema_version 99"):
        Recipe.from_json('{"schema_version": 99}')
    with pytest.raises(BertlensError, match="unknown field 'poler'.*did you mean 'pooler'"):
        Recipe.from_json(f'{{"schema_version": {SCHEMA_VERSION}, "poler": "cls"}}')
    with pytest.raises(BertlensError, match="not valid JSON"):
        Recipe.from_json("{")


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("normalize", "no", "field 'normalize' must be true or false, got \"no\""),
        ("layers", "abc", "field 'layers' must be a list of integers"),
        ("layers", [1.5], "field 'layers' must be a list of integers"),
        ("max_length", "256", "field 'max_length' must be an integer or null"),
        ("mix_weights", [0.1, None], "field 'mix_weights' must be a list of finite numbers"),
        ("mix_gamma", True, "field 'mix_gamma' must be a finite number"),
        ("include_special", 1, "field 'include_special' must be true or false"),
        ("model", "", "field 'model' must be a non-empty string"),
    ],
)
def test_recipe_json_is_type_checked_field_by_field(field, value, expected):
    from bertlens.errors import BertlensError

    with pytest.raises(BertlensError, match=re.escape(expected)):
        Recipe.from_dict({"schema_version": SCHEMA_VERSION, field: value}, where="r.json")


def test_dimension_loss_round_trips_and_is_checked(tmp_path):
    recipe = Recipe(dimension_loss=((64, 0.01), (16, 0.2)))
    assert recipe.dimension_loss == ((16, 0.2), (64, 0.01)) and recipe.loss_at(64) == 0.01 and recipe.loss_at(8) is None
    again = Recipe.load(recipe.save(tmp_path / "r.json"))
    assert again == recipe and '"64": 0.01' in (tmp_path / "r.json").read_text()
    with pytest.raises(BertlensError, match="dimension_loss"):
        Recipe.from_json('{"schema_version": 1, "dimension_loss": {"x": 1}}')
    with pytest.raises(BertlensError, match="dimension_loss"):
        Recipe(dimension_loss=((0, 0.1),))


def test_a_relative_model_directory_is_saved_as_its_absolute_path(tmp_path, tiny_bert_dir, monkeypatch):
    import shutil

    shutil.copytree(tiny_bert_dir, tmp_path / "models" / "mine")
    monkeypatch.chdir(tmp_path)
    path = Recipe(model="models/mine", pooler="cls").save(tmp_path / "out" / "recipe.json")
    saved = Recipe.load(path)
    assert saved.model == str((tmp_path / "models" / "mine").resolve()) and saved.pooler == "cls"
    monkeypatch.chdir(tmp_path / "out")  # from elsewhere the recipe still finds its model
    from bertlens.embedding.embedder import Embedder

    assert Embedder(Recipe.load("recipe.json")).encode(["a text"]).shape == (1, 32)
    assert Recipe.load(Recipe(model="default").save(tmp_path / "d.json")).model == "default"  # names stay names


def test_a_first_stage_round_trips_with_its_files_relative_to_the_recipe(tmp_path):
    (tmp_path / "post.safetensors").write_bytes(b"x")
    recipe = Recipe(pooler="tokens", precision="bf16", first_stage=Recipe(pooler="cls", postprocess="post.safetensors"))
    assert recipe.first_stage.precision == "bf16"  # one encoder reads both: the tokens' precision runs
    path = recipe.save(tmp_path / "r.json")
    saved = json.loads(path.read_text())
    assert saved["first_stage"]["pooler"] == "cls" and "schema_version" not in saved["first_stage"]
    loaded = Recipe.load(path)
    assert loaded.first_stage.postprocess == str((tmp_path / "post.safetensors").resolve())
    assert loaded.replace(first_stage=loaded.first_stage.replace(postprocess="post.safetensors")) == recipe
    plain = Recipe(pooler="tokens").to_dict()  # a multi-vector recipe without one reads as it did before
    assert "first_stage" not in plain and "rerank_depth" not in plain


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"first_stage": Recipe()}, "'first_stage' applies to a multi-vector recipe"),
        ({"rerank_depth": 50}, "'rerank_depth' applies to a multi-vector recipe"),
        ({"pooler": "tokens", "rerank_depth": 50}, "give a first_stage"),
        ({"pooler": "tokens", "first_stage": Recipe(pooler="tokens")}, "first_stage must be a pooled recipe"),
        ({"pooler": "tokens", "first_stage": Recipe(model="other")}, "give both the same model and max_length"),
        ({"pooler": "tokens", "first_stage": Recipe(max_length=64)}, "give both the same model and max_length"),
        ({"pooler": "tokens", "first_stage": Recipe(long_text="windows:maxp")}, "keeps a vector per chunk"),
        ({"pooler": "tokens", "first_stage": Recipe(), "rerank_depth": 0}, "rerank_depth 0 must be between"),
    ],
)
def test_invalid_first_stages_are_rejected(fields, message):
    with pytest.raises(BertlensError, match=message):
        Recipe(**fields)


def test_a_first_stage_is_checked_as_a_recipe_of_its_own():
    with pytest.raises(BertlensError, match=r"r\.json: first_stage: field 'normalize' must be true or false"):
        Recipe.from_dict(
            {"schema_version": SCHEMA_VERSION, "pooler": "tokens", "first_stage": {"normalize": "no"}}, "r.json"
        )
    with pytest.raises(BertlensError, match="field 'first_stage' must be a pooled recipe"):
        Recipe.from_dict({"schema_version": SCHEMA_VERSION, "pooler": "tokens", "first_stage": "recipe.json"}, "r")
