import pytest

from bertlens.embedding.onnx_backend import session
from bertlens.errors import BertlensError


def test_a_file_onnx_runtime_cannot_load_is_one_clear_error(tmp_path):
    path = tmp_path / "model.onnx"
    path.write_bytes(b"\x08\x07 this is not a protobuf of a model")
    with pytest.raises(BertlensError, match="is not a model ONNX Runtime can load .*export it again"):
        session(path)
