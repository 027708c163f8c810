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
