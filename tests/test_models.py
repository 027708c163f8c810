import pytest

from bertlens.errors import BertlensError
from bertlens.models import resolve_model


def test_default_model_resolves_to_the_packaged_minilm():
    ref = resolve_model("default")
    assert (ref.num_layers, ref.hidden_size) == (6, 384)
    assert resolve_model("all-MiniLM-L6-v2").fingerprint == ref.fingerprint


def test_fingerprint_depends_on_weights(tiny_bert_dir):
    assert resolve_model(str(tiny_bert_dir)).fingerprint != resolve_model("default").fingerprint


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p / "missing", "neither a directory nor a hub id"),
        (lambda p: p, "no config.json"),
        (lambda p: (p / "config.json").write_text("{}") and p, "no \\*.safetensors"),
    ],
)
def test_paths_that_are_not_models(tmp_path, make, message):
    target = make(tmp_path)
    with pytest.raises(BertlensError, match=message):
        resolve_model(str(target))


def test_pickle_weights_are_refused(tmp_path):
    (tmp_path / "config.json").write_text('{"num_hidden_layers": 2, "hidden_size": 8}')
    (tmp_path / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(BertlensError, match="loads only safetensors"):
        resolve_model(str(tmp_path))


def test_offline_hub_id_is_a_clear_error():
    with pytest.raises(BertlensError, match="could not be fetched"):
        resolve_model("nobody/no-such-model-xyz")


def test_weights_saved_in_float16_load_in_float32(tiny_bert_dir, tmp_path):
    """A model published in float16 (common on the Hub; transformers 5 keeps the saved dtype) encodes at every
    precision: the encoder is float32 whatever the file holds (it failed with 'mixed dtype' under bf16 autocast)."""
    import json
    import shutil

    import numpy as np
    import torch
    from safetensors.torch import load_file, save_file

    from bertlens.embedding.embedder import Embedder
    from bertlens.representation.recipe import Recipe

    half, rounded = tmp_path / "half", tmp_path / "rounded"
    for folder, dtype in ((half, torch.float16), (rounded, torch.float32)):
        shutil.copytree(tiny_bert_dir, folder)
        weights = load_file(tiny_bert_dir / "model.safetensors")
        save_file({k: v.half().to(dtype) for k, v in weights.items()}, folder / "model.safetensors", {"format": "pt"})
        config = json.loads((folder / "config.json").read_text())
        config = {k: v for k, v in config.items() if k not in ("dtype", "torch_dtype")}  # as many Hub configs
        (folder / "config.json").write_text(json.dumps({**config, "torch_dtype": str(dtype).split(".")[1]}))
    texts = ["a float16 checkpoint", "read as float32"]
    from_half = Embedder(Recipe(model=str(half)))
    assert {p.dtype for p in from_half.encoder.model.parameters()} == {torch.float32}
    # float16 -> float32 is exact: the same vectors as the same weights saved in float32
    assert np.array_equal(from_half.embed(texts).vectors, Embedder(Recipe(model=str(rounded))).embed(texts).vectors)
    assert np.isfinite(Embedder(Recipe(model=str(half), precision="bf16")).embed(texts).vectors).all()
