"""`bertlens serve` as users start it: a real process on loopback, here with two workers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe


def start_server(*flags: str) -> tuple[subprocess.Popen, str]:
    """`bertlens serve FLAGS` in its own process on a free loopback port, once /health answers: (process, url)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "bertlens", "serve", *flags, "--port", str(port)],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if httpx.get(url + "/health").status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    return process, url


def test_serve_with_two_workers_answers_with_the_recipes_vectors(tiny_bert_dir):
    process, url = start_server(
        "--model", str(tiny_bert_dir), "--pooler", "mean", "--workers", "2", "--precision", "fp32"
    )
    try:
        texts = [f"text {i} " + "word " * i for i in range(12)]
        reply = httpx.post(url + "/v1/embeddings", json={"input": texts, "encoding_format": "float"}, timeout=60)
        info = httpx.get(url + "/info").json()
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
    got = np.array([d["embedding"] for d in reply.json()["data"]])
    np.testing.assert_allclose(got, Embedder(Recipe(model=str(tiny_bert_dir), pooler="mean")).encode(texts), atol=1e-5)
    assert info["workers"] == 2
    assert "2 worker(s) x" in stderr


def test_a_port_in_use_is_one_line_and_exit_1_before_the_model_loads(tiny_bert_dir, capsys):
    from bertlens.cli.main import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["serve", "--model", str(tiny_bert_dir), "--port", str(port)])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in err and "choose another --port" in err


@pytest.mark.extended  # a real server process; the app test covers the routes: `make test-extended`
def test_two_recipe_files_are_served_by_their_names(tiny_bert_dir, tmp_path):
    for name, pooler in (("plain", "mean"), ("first", "cls")):
        Recipe(model=str(tiny_bert_dir), pooler=pooler, precision="fp32").save(tmp_path / f"{name}.json")
    process, url = start_server("--recipe", str(tmp_path / "plain.json"), "--recipe", str(tmp_path / "first.json"))
    try:
        models = httpx.get(url + "/v1/models").json()
        reply = httpx.post(url + "/v1/embeddings", json={"input": ["a text"], "model": "first"}, timeout=60)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
    assert [m["id"] for m in models["data"]] == ["plain", "first"] and "1 model(s) loaded" in stderr
    expected = Embedder(Recipe(model=str(tiny_bert_dir), pooler="cls")).encode(["a text"])
    np.testing.assert_allclose([reply.json()["data"][0]["embedding"]], expected, atol=1e-5)


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--pooler", "max"), "--pooler would change every recipe"),
        (("--backend", "onnx"), "need the PyTorch backend"),
    ],
)
def test_several_recipes_refuse_flags_that_would_change_them_all(tiny_bert_dir, tmp_path, capsys, extra, message):
    from bertlens.cli.main import main

    Recipe(model=str(tiny_bert_dir)).save(tmp_path / "a.json")
    (tmp_path / "b").mkdir()
    Recipe(model=str(tiny_bert_dir)).save(tmp_path / "b" / "a.json")
    Recipe(model=str(tiny_bert_dir)).save(tmp_path / "c.json")
    code = main(["serve", "--recipe", str(tmp_path / "a.json"), "--recipe", str(tmp_path / "c.json"), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 1 and message in err and len(err.splitlines()) == 1
    code = main(["serve", "--recipe", str(tmp_path / "a.json"), "--recipe", str(tmp_path / "b" / "a.json")])
    assert code == 1 and "two --recipe files are named 'a'" in capsys.readouterr().err


@pytest.mark.extended  # a real server under load for about 20 s: `make test-extended`
def test_sigterm_drains_every_request_in_flight_then_exits_0(default_model_dir):
    """Requests sent before SIGTERM are all answered (200, or 503 if they reached the server after it); the
    ones in flight at the signal are served; the server then exits 0."""
    import signal
    from concurrent.futures import ThreadPoolExecutor

    texts = [[f"request {i} text {j} " + "word " * 120 for j in range(4)] for i in range(24)]
    # about two texts a batch: seconds of work in all
    process, url = start_server("--model", str(default_model_dir), "--precision", "fp32", "--max-batch-tokens", "300")
    try:
        with httpx.Client(timeout=120, limits=httpx.Limits(max_connections=32)) as client:

            def send(batch):
                reply = client.post(url + "/v1/embeddings", json={"input": batch, "encoding_format": "float"})
                return reply, time.time()

            with ThreadPoolExecutor(len(texts)) as pool:
                pending = [pool.submit(send, batch) for batch in texts]
                time.sleep(1.0)  # every request has reached the server: queued or encoding
                signalled = time.time()
                process.send_signal(signal.SIGTERM)
                answered = [future.result() for future in pending]  # a lost request raises a transport error here
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        _, stderr = process.communicate(timeout=60)
    assert code == 0, stderr
    expected = Embedder(Recipe(model=str(default_model_dir))).encode([t for batch in texts for t in batch])
    finished_after_the_signal = 0
    for k, (reply, when) in enumerate(answered):
        if reply.status_code == 503:  # reached the server after the signal: refused in so many words, not dropped
            assert "shutting down" in reply.json()["error"]["message"]
            continue
        assert reply.status_code == 200
        got = np.array([d["embedding"] for d in reply.json()["data"]])
        np.testing.assert_allclose(got, expected[4 * k : 4 * k + 4], atol=1e-4)
        finished_after_the_signal += when > signalled
    assert finished_after_the_signal > 0, "nothing was in flight at the signal: the test proves nothing"
    assert "Traceback" not in stderr
