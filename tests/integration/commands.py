"""The CLI call that exercises each command on a model, shared by the family matrix and the base-size checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe

TEXTS = [f"{a} {b} number {i}" for i, (a, b) in enumerate((a, b) for a in ("cats", "rain", "code") for b in "xyzw")]


def texts_file(tmp_path: Path) -> Path:
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(TEXTS * 8) + "\n")
    return path


def command_call(command: str, model: str, tmp: Path, data_dir: Path) -> list[str]:
    """The CLI call that exercises `command` on `model`: the miniature data directory, a few training steps."""
    data = ["--data-dir", str(data_dir)]
    texts = str(texts_file(tmp))
    cache = ["--cache-dir", str(tmp / "c")]
    quick = ["--epochs", "1", "--min-steps", "2", "--batch-size", "8"]
    out = ["--out", str(tmp / command.replace(" ", "-"))]
    calls = {
        "embed": ["embed", texts, "--model", model, "--pooler", "attention", "--out", str(tmp / "embed.npy")],
        "sweep": ["sweep", "--task", "sst2", *data, "--model", model, "--resamples", "50", *cache, *out],
        "probe": ["probe", "--suite", "linguistic", *data, "--model", model, "--tasks", "upos,sentence_length",
                  "--resamples", "50", *cache, *out],
        "finetune": ["finetune", "--task", "sst2", *data, "--model", model, "--size", "16", "--strategy", "llrd:0.9",
                     *quick, *out],
        "compare": ["compare", "--task", "sst2", *data, "--model", model, "--sizes", "16", "--strategies",
                    "frozen,partial:1", "--seeds", "1", "--drift-task", "none", *quick, *out],
        "geometry": ["geometry", "--texts", texts, "--model", model, *out],
        "postprocess": ["postprocess", "--texts", texts, "--model", model, "--steps", "center,normalize", *out],
        "contrastive": ["contrastive", "--mode", "simcse", "--texts", texts, "--model", model, *quick, *out],
        "longdoc": ["longdoc", "--task", "movie_reviews", *data, "--model", model, "--max-length", "64", "--folds",
                    "2", "--resamples", "50", "--strategies", "head,head_tail,windows:mean,hier:gru", *out],
        "domain": ["domain", "--texts", texts, *data, "--model", model, "--samples", "20", *out],
        "pretrain": ["pretrain", "--from", model, "--texts", texts, "--max-length", "32", *quick, *cache, *out],
        "distill": ["distill", "--teacher", model, "--student", "layers:2", "--texts", texts, *quick, *cache, *out],
        "export onnx": ["export", "--format", "onnx", "--model", model, "--texts", texts, *out],
        "export st": ["export", "--format", "sentence-transformers", "--model", model, "--texts", texts, *out],
        "recommend": ["recommend", "--task", "sst2", *data, "--model", model, "--budget-minutes", "0.25", *cache, *out],
        "index": ["index", "--data", texts, "--model", model, "--batch", "16", "--out", str(tmp / "store")],
        "search": ["search", "--index", str(tmp / "store"), "--query", TEXTS[0], "--top-k", "3"],
    }  # fmt: skip
    return calls[command]


def serve_check(model: str) -> None:
    """The server in-process: the OpenAI route returns the recipe's vectors."""
    from fastapi.testclient import TestClient

    from bertlens.serving.app import create_app

    embedder = Embedder(Recipe(model=model))
    with TestClient(create_app(embedder)) as client:
        reply = client.post("/v1/embeddings", json={"input": TEXTS[:3]})
    assert reply.status_code == 200, reply.text
    got = np.array([d["embedding"] for d in reply.json()["data"]])
    np.testing.assert_allclose(got, embedder.encode(TEXTS[:3]), atol=1e-5)


def run_and_check(command: str, model: str, tmp: Path, data_dir: Path, capsys) -> None:
    """Run `command` on `model` through the CLI and check what it wrote: the server's vectors, the
    sentence-transformers directory against bertlens, the ONNX export's parity."""
    from bertlens.cli.main import main

    if command == "serve":
        serve_check(model)
        return
    if command == "search":  # a search needs an index: made first, with the same model
        assert main([*command_call("index", model, tmp, data_dir), "--quiet"]) == 0, capsys.readouterr().err
        capsys.readouterr()
    code = main([*command_call(command, model, tmp, data_dir), "--quiet"])
    assert code == 0, capsys.readouterr().err
    if command == "search":
        lines = capsys.readouterr().out.strip().splitlines()  # query id, rank, document id, cosine, text
        assert len(lines) == 3 and float(lines[0].split("\t")[3]) > 0.999  # the query's own text is indexed
    if command == "export st":
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(str(tmp / "export-st"), device="cpu")
        np.testing.assert_allclose(st.encode(TEXTS[:3]), Embedder(Recipe(model=model)).encode(TEXTS[:3]), atol=1e-5)
    if command == "export onnx":
        import json

        record = json.loads((tmp / "export-onnx" / "export.json").read_text())
        assert record["parity"]["min_cosine"] >= 0.99999
