"""`bertlens embed` end to end: outputs, bad input (one line, exit 1), kill and resume."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow.parquet as pq
import pytest

from bertlens.cli.main import main
from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe

TEXTS = ["a man plays a guitar", "the cat sleeps", "rain falls on the town", "hello"]


def run_cli(capsys, *argv):
    code = main(["embed", *map(str, argv), "--quiet"])
    captured = capsys.readouterr()
    return code, captured.err


@pytest.fixture
def texts_file(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(TEXTS) + "\n")
    return path


def test_npy_and_parquet_hold_the_embedder_vectors(tmp_path, texts_file, tiny_bert_dir, capsys):
    expected = Embedder(Recipe(model=str(tiny_bert_dir), pooler="max")).encode(TEXTS)
    fp32 = ["--model", tiny_bert_dir, "--pooler", "max", "--precision", "fp32"]
    code, _ = run_cli(capsys, texts_file, "--out", tmp_path / "v.npy", *fp32)
    assert code == 0
    assert np.abs(np.load(tmp_path / "v.npy") - expected).max() <= 1e-6
    code, _ = run_cli(capsys, texts_file, "--out", tmp_path / "v.parquet", *fp32)
    table = pq.read_table(tmp_path / "v.parquet")
    assert table["id"].to_pylist() == [1, 2, 3, 4]
    assert np.abs(np.array(table["embedding"].to_pylist()) - expected).max() <= 1e-6
    assert not list(tmp_path.glob("*.partial")) and not list(tmp_path.glob(".*tmp*"))


def test_recipe_file_and_csv_column(tmp_path, tiny_bert_dir, capsys):
    recipe = Recipe(model=str(tiny_bert_dir), layers=(0, -1), mixer="concat", pooler="cls").save(tmp_path / "r.json")
    csv_path = tmp_path / "t.csv"
    csv_path.write_text("id,sentence\n" + "".join(f'{i},"{t}"\n' for i, t in enumerate(TEXTS)))
    code, _ = run_cli(capsys, csv_path, "--column", "sentence", "--out", tmp_path / "v.npy", "--recipe", recipe)
    assert code == 0
    assert np.load(tmp_path / "v.npy").shape == (4, 64)


def test_parquet_input_by_column_gives_the_same_rows_and_ids(tmp_path, tiny_bert_dir, capsys):
    import pyarrow as pa

    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"doc": [f"d{i}" for i in range(4)], "text": TEXTS}), source)
    expected = Embedder(Recipe(model=str(tiny_bert_dir), pooler="mean")).encode(TEXTS)
    flags = ["--model", tiny_bert_dir, "--pooler", "mean", "--precision", "fp32"]
    code, _ = run_cli(capsys, source, "--column", "text", "--out", tmp_path / "v.parquet", *flags)
    table = pq.read_table(tmp_path / "v.parquet")
    assert code == 0 and table["id"].to_pylist() == [1, 2, 3, 4]
    assert np.abs(np.array(table["embedding"].to_pylist()) - expected).max() <= 1e-6


def test_empty_text_policies(tmp_path, tiny_bert_dir, capsys):
    path = tmp_path / "t.txt"
    path.write_text("one\n   \nthree\n")
    code, err = run_cli(capsys, path, "--out", tmp_path / "v.npy", "--model", tiny_bert_dir)
    assert code == 1 and "line 2" in err and "set --empty to skip" in err
    assert not (tmp_path / "v.npy").exists()
    code, _ = run_cli(capsys, path, "--out", tmp_path / "v.npy", "--model", tiny_bert_dir, "--empty", "skip")
    assert code == 0 and np.load(tmp_path / "v.npy").shape[0] == 2
    assert np.load(tmp_path / "v.ids.npy").tolist() == [1, 3]
    code, _ = run_cli(capsys, path, "--out", tmp_path / "k.npy", "--model", tiny_bert_dir, "--empty", "keep")
    assert code == 0 and np.load(tmp_path / "k.npy").shape[0] == 3


def test_truncation_is_reported(tmp_path, tiny_bert_dir, capsys):
    path = tmp_path / "t.txt"
    path.write_text("short\n" + "word " * 50 + "\n")
    code, err = run_cli(capsys, path, "--out", tmp_path / "v.npy", "--model", tiny_bert_dir, "--max-length", "16")
    assert code == 0 and "1 texts were longer than 16 tokens" in err


@pytest.mark.parametrize(
    "content, extra, message",
    [
        (None, [], "does not exist"),
        (b"", [], "is empty"),
        (b"ok\nbad \xc3\x28\n", [], "line 2: not UTF-8"),
        (b"ok\n", ["--pooler", "meen"], "unknown pooler 'meen'.*valid: cls, mean, max, attention"),
        (b"ok\n", ["--layers", "9"], "layer 9 is out of range.*valid are 0..2"),
        (b"ok\n", ["--model", "/nonexistent/model"], "neither a directory nor a hub id"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(tmp_path, tiny_bert_dir, capsys, content, extra, message):
    path = tmp_path / "in.txt"
    if content is not None:
        path.write_bytes(content)
    model = [] if "--model" in extra else ["--model", tiny_bert_dir]
    code, err = run_cli(capsys, path, "--out", tmp_path / "v.npy", *model, *extra)
    lines = [line for line in err.splitlines() if "error" in line]
    assert code == 1 and len(lines) == 1 and "Traceback" not in err
    assert __import__("re").search(message, lines[0]), lines[0]
    assert not (tmp_path / "v.npy").exists() and not (tmp_path / "v.npy.partial").exists()


def test_a_model_directory_that_is_not_a_model(tmp_path, texts_file, capsys):
    code, err = run_cli(capsys, texts_file, "--out", tmp_path / "v.npy", "--model", tmp_path)
    assert code == 1 and "no config.json" in err


@pytest.mark.extended  # kills a real embed process mid-run (31 s)
def test_killed_run_resumes_without_losing_or_duplicating_rows(tmp_path, default_model_dir):
    texts = [f"sentence number {i} about topic {i % 17} and a few more words" for i in range(1200)]
    path = tmp_path / "many.txt"
    path.write_text("\n".join(texts) + "\n")
    command = [sys.executable, "-m", "bertlens", "embed", str(path), "--shard-size", "100", "--quiet"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    subprocess.run([*command, "--out", str(tmp_path / "full.npy")], check=True, env=env)

    out = tmp_path / "resumed.npy"
    partial = tmp_path / "resumed.npy.partial"
    process = subprocess.Popen([*command, "--out", str(out)], env=env)
    deadline = time.time() + 120
    while len(list(partial.glob("shard-*.sha256"))) < 3 and time.time() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done_before = len(list(partial.glob("shard-*.sha256")))  # finished: a shard's checksum marker is written last
    written = len(list(partial.glob("shard-*.npz")))  # a kill between a shard and its marker leaves one unverified
    assert not out.exists() and 3 <= done_before < 12 and written in (done_before, done_before + 1)
    result = subprocess.run([*command, "--out", str(out)], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert f"resumed after {done_before} finished shards" in result.stderr
    assert ("failed its checksum; embedding it again" in result.stderr) == (written > done_before)
    assert np.abs(np.load(out) - np.load(tmp_path / "full.npy")).max() <= 1e-5
    assert not partial.exists()


def test_a_different_input_does_not_mix_with_an_old_partial_run(tmp_path, texts_file, tiny_bert_dir, capsys):
    partial = tmp_path / "v.npy.partial"
    partial.mkdir()
    (partial / "manifest.json").write_text('{"input_sha256": "something else"}')
    code, err = run_cli(capsys, texts_file, "--out", tmp_path / "v.npy", "--model", tiny_bert_dir)
    assert code == 1 and "--restart" in err
    code, _ = run_cli(capsys, texts_file, "--out", tmp_path / "v.npy", "--model", tiny_bert_dir, "--restart")
    assert code == 0 and (tmp_path / "v.npy").exists()


def test_onnx_backend_writes_the_same_rows_in_the_same_order_with_shards(tiny_bert_dir, tmp_path):
    texts = [f"text number {i} " + "word " * (i % 9) for i in range(23)]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(texts) + "\n")
    export = ["export", "--format", "onnx", "--model", str(tiny_bert_dir), "--pooler", "max", "--normalize"]
    assert main([*export, "--texts", str(source), "--out", str(tmp_path / "onnx"), "--quiet"]) == 0
    common = [str(source), "--shard-size", "5", "--quiet"]
    assert (
        main(
            ["embed", *common, "--backend", "onnx", "--model", str(tmp_path / "onnx"), "--out", str(tmp_path / "o.npy")]
        )
        == 0
    )
    torch_args = ["--model", str(tiny_bert_dir), "--pooler", "max", "--normalize", "--precision", "fp32"]
    torch_args += ["--out", str(tmp_path / "t.npy")]
    assert main(["embed", *common, *torch_args]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"), np.load(tmp_path / "t.npy"), atol=2e-5)
    assert (
        main(
            [
                "embed",
                *common,
                "--backend",
                "onnx",
                "--model",
                str(tmp_path / "onnx"),
                "--pooler",
                "cls",
                "--out",
                str(tmp_path / "x.npy"),
            ]
        )
        == 1
    )


@pytest.mark.parametrize(
    ("flags", "chosen"), [(frozenset({"avx2"}), "fp32"), (frozenset({"avx2", "avx512_bf16"}), "bf16")]
)
def test_embed_defaults_to_auto_precision_and_says_what_it_chose(
    tmp_path, texts_file, tiny_bert_dir, capsys, monkeypatch, flags, chosen
):
    import bertlens.encoding.precision as precision

    monkeypatch.setattr(precision, "cpu_flags", lambda: flags)
    argv = ["embed", str(texts_file), "--out", str(tmp_path / "v.npy"), "--model", str(tiny_bert_dir)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"precision auto -> {chosen}" in err
    expected = Embedder(Recipe(model=str(tiny_bert_dir), precision=chosen)).encode(TEXTS)
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), expected, atol=1e-6)


def test_role_applies_the_recipes_prompt(tmp_path, texts_file, tiny_bert_dir, capsys):
    recipe = Recipe(model=str(tiny_bert_dir), query_prompt="query: ", precision="fp32")
    path = recipe.save(tmp_path / "r.json")
    code, _ = run_cli(capsys, texts_file, "--out", tmp_path / "q.npy", "--recipe", path, "--role", "query")
    assert code == 0
    expected = Embedder(recipe).encode(["query: " + t for t in TEXTS])
    assert np.abs(np.load(tmp_path / "q.npy") - expected).max() <= 1e-6
    code, err = run_cli(capsys, texts_file, "--out", tmp_path / "d.npy", "--recipe", path, "--role", "document")
    assert code == 0 and "no document_prompt: texts embedded as given" in err
    flags = ["--model", tiny_bert_dir, "--precision", "fp32", "--document-prompt", "passage: ", "--role", "document"]
    code, _ = run_cli(capsys, texts_file, "--out", tmp_path / "p.npy", *flags)
    expected = Embedder(recipe.replace(document_prompt="passage: ")).encode(["passage: " + t for t in TEXTS])
    assert code == 0 and np.abs(np.load(tmp_path / "p.npy") - expected).max() <= 1e-6
