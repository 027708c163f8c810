"""The OpenVINO backend (embedding/openvino_backend.py) and `export --format openvino`: bertlens' own graph (pooling
inside) run by OpenVINO equals ONNX Runtime's run of it (fp32 within float rounding, int8 within the gate), in f32
even on a CPU whose OpenVINO default is bf16; the IR is checksummed; without OpenVINO, one line names the extra."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from bertlens.cli.main import main
from bertlens.embedding.onnx_backend import OnnxEmbedder
from bertlens.errors import BertlensError

TEXTS = [f"text number {i}, " + "with some more words " * (i % 7) for i in range(40)]


@pytest.fixture(scope="module")
def exports(tiny_bert_dir, tmp_path_factory):
    """The tiny model exported by the command line: ONNX fp32, OpenVINO fp32, OpenVINO static int8 (forced: a random
    model's int8 need not pass the gate, the comparison below is with ONNX Runtime on the same graph)."""
    pytest.importorskip("openvino")
    root = tmp_path_factory.mktemp("exports")
    texts = root / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    base = ["export", "--model", str(tiny_bert_dir), "--pooler", "mean", "--texts", str(texts), "--quiet"]
    assert main([*base, "--format", "onnx", "--out", str(root / "onnx")]) == 0
    assert main([*base, "--format", "openvino", "--out", str(root / "ov")]) == 0
    int8 = ["--quantize", "int8-static", "--force", "--out", str(root / "ov-int8")]
    assert main([*base, "--format", "openvino", *int8]) == 0
    assert main([*base, "--format", "openvino", "--quantize", "bf16", "--out", str(root / "ov-bf16")]) == 0
    return root


def test_openvino_runs_the_exported_graph_as_onnx_runtime_does(exports):
    from bertlens.embedding.openvino_backend import IR_FILE, OpenVinoEmbedder

    onnx = OnnxEmbedder(exports / "onnx").encode(TEXTS)
    read_from_onnx = OpenVinoEmbedder(exports / "onnx")  # an ONNX export runs as it is
    assert read_from_onnx.model_path.name == "model.onnx"
    np.testing.assert_allclose(read_from_onnx.encode(TEXTS), onnx, atol=2e-5)
    from_ir = OpenVinoEmbedder(exports / "ov")
    assert from_ir.model_path.name == IR_FILE
    np.testing.assert_allclose(from_ir.encode(TEXTS), onnx, atol=2e-5)


def test_f32_is_asked_for_and_bf16_only_when_chosen(exports):
    from bertlens.embedding.openvino_backend import OpenVinoEmbedder

    f32 = OpenVinoEmbedder(exports / "ov")
    assert str(f32.session.compiled.get_property("INFERENCE_PRECISION_HINT")) == "<Type: 'float32'>"
    bf16 = OpenVinoEmbedder(exports / "ov", precision="bf16")
    cos = np.sum(bf16.encode(TEXTS) * f32.encode(TEXTS), axis=1)
    cos /= np.linalg.norm(bf16.encode(TEXTS), axis=1) * np.linalg.norm(f32.encode(TEXTS), axis=1)
    assert cos.min() > 0.99  # close, and not bit-equal where the CPU has bf16 instructions
    with pytest.raises(BertlensError, match="OpenVINO precision 'fp16': use one of fp32, bf16"):
        OpenVinoEmbedder(exports / "ov", precision="fp16")


def test_a_bf16_export_runs_in_bf16_behind_the_gate_and_onnx_refuses_it(exports, tmp_path, capsys):
    from bertlens.embedding.openvino_backend import OpenVinoEmbedder

    record = json.loads((exports / "ov-bf16" / "export.json").read_text())
    assert record["openvino_precision"] == "bf16" and record["openvino_parity"]["min_cosine"] >= 0.98
    assert OpenVinoEmbedder(exports / "ov-bf16").precision == "bf16"  # what the export was gated at
    assert OpenVinoEmbedder(exports / "ov").precision == "fp32"
    argv = ["export", "--format", "onnx", "--quantize", "bf16", "--out", str(tmp_path / "x")]
    assert main(argv) == 1
    assert "--quantize bf16 is OpenVINO's inference precision: use it with --format openvino" in capsys.readouterr().err


def test_the_openvino_export_records_its_ir_and_both_checks(exports):
    record = json.loads((exports / "ov-int8" / "export.json").read_text())
    assert record["format"] == "openvino" and {"openvino_model.xml", "openvino_model.bin"} <= set(record["sha256"])
    assert record["precision"] == "fp32" and "openvino_parity" in record  # model.onnx stays fp32; the IR is int8
    assert record["openvino_int8"]["method"].startswith("NNCF") and "judged_on" in record["openvino_int8"]
    judged = record["openvino_int8"]
    assert judged["below_floor"] is not None and f"of the {judged['texts']} judging texts" in judged["vouches_for"]
    from bertlens.embedding.openvino_int8 import rest_precision

    assert record["openvino_precision"] == rest_precision()  # the rest runs as it was judged: bf16 where the CPU has it
    from bertlens.embedding.openvino_backend import OpenVinoEmbedder

    onnx_int8 = OnnxEmbedder(exports / "ov-int8").encode(TEXTS)  # fp32: the directory's model.onnx
    on_openvino = OpenVinoEmbedder(exports / "ov-int8").encode(TEXTS)
    cos = (
        np.sum(onnx_int8 * on_openvino, axis=1)
        / np.linalg.norm(onnx_int8, axis=1)
        / np.linalg.norm(on_openvino, axis=1)
    )
    assert cos.min() > 0.9  # ONNX Runtime runs the fp32 graph here: the IR's int8 is NNCF's, forced past the gate


def test_a_damaged_ir_is_refused(exports, tmp_path):
    import shutil

    from bertlens.embedding.openvino_backend import OpenVinoEmbedder

    copy = tmp_path / "ov"
    shutil.copytree(exports / "ov", copy)
    weights = copy / "openvino_model.bin"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(BertlensError, match="openvino_model.bin does not match the checksum in export.json"):
        OpenVinoEmbedder(copy)


def test_embed_with_the_openvino_backend_writes_the_onnx_rows(exports, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("\n".join(TEXTS) + "\n")
    for backend in ("onnx", "openvino"):
        argv = ["embed", str(source), "--backend", backend, "--model", str(exports / "ov"), "--quiet"]
        assert main([*argv, "--out", str(tmp_path / f"{backend}.npy")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "openvino.npy"), np.load(tmp_path / "onnx.npy"), atol=2e-5)


def test_without_openvino_the_backend_is_one_line_naming_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "openvino", None)  # as if not installed
    source = tmp_path / "in.txt"
    source.write_text("a text\n")
    argv = ["embed", str(source), "--backend", "openvino", "--model", str(tmp_path), "--out", str(tmp_path / "o.npy")]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert "--backend openvino needs the 'openvino' extra" in err and "pip install 'bertlens[openvino]'" in err
    assert len(err.splitlines()) == 1


def test_openvino_int8_without_nncf_names_its_extra_before_any_work(tiny_bert_dir, tmp_path, monkeypatch, capsys):
    pytest.importorskip("openvino")
    monkeypatch.setitem(sys.modules, "nncf", None)  # as if not installed
    texts = tmp_path / "t.txt"
    texts.write_text("a text\nanother text\n")
    argv = [
        "export",
        "--format",
        "openvino",
        "--quantize",
        "int8",
        "--model",
        str(tiny_bert_dir),
        "--texts",
        str(texts),
    ]
    assert main([*argv, "--out", str(tmp_path / "x")]) == 1
    assert "needs the 'openvino-int8' extra (nncf not installed): pip install 'bertlens[openvino-int8]'" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "x").exists() and not list(tmp_path.glob(".x*"))
