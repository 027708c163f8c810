import dataclasses
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
