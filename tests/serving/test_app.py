"""The server, run for real on loopback: the official openai client gets the recipe's vectors (float and base64),
TEI-style /embed, concurrent clients batched, a full queue 503, metrics (every bad request: test_bad_requests.py)."""

from __future__ import annotations

import asyncio
import base64
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
import uvicorn

from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe
from bertlens.serving.app import create_app
from bertlens.serving.batcher import DynamicBatcher, QueueFull
from bertlens.serving.config import ServeLimits, ServeOptions

TEXTS = ["a short text", "a somewhat longer text about cats and dogs", "x"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """uvicorn in a thread on a free loopback port; stopped (gracefully) on exit."""

    def __init__(self, app):
        self.port = _free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started and time.time() < deadline:
            time.sleep(0.05)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="module")
def embedder(tiny_bert_dir):
    return Embedder(Recipe(model=str(tiny_bert_dir), pooler="max", normalize=True))


@pytest.fixture(scope="module")
def served(embedder):
    limits = ServeLimits(max_inputs=8, max_chars=1000, max_body_bytes=20_000, max_wait_ms=20)
    with Server(create_app(embedder, ServeOptions(limits, api_key="secret", name="tiny"))) as url:
        yield url


def test_the_openai_client_gets_the_recipes_vectors(served, embedder):
    from openai import OpenAI

    client = OpenAI(base_url=served + "/v1", api_key="secret")
    expected = embedder.encode(TEXTS)
    for fmt in ("float", "base64", None):  # None: the client asks for base64 itself and decodes it
        extra = {"encoding_format": fmt} if fmt else {}
        response = client.embeddings.create(input=TEXTS, model="tiny", **extra)
        if fmt == "base64":  # asked for explicitly, it is returned as sent: little-endian float32
            got = np.array([np.frombuffer(base64.b64decode(d.embedding), dtype="<f4") for d in response.data])
        else:
            got = np.array([d.embedding for d in response.data])
        np.testing.assert_allclose(got, expected, atol=1e-6)
        assert [d.index for d in response.data] == [0, 1, 2] and response.model == "tiny"
        tokens = sum(len(ids) for ids in embedder.encoder.tokenizer(TEXTS)["input_ids"])
        assert response.usage.prompt_tokens == response.usage.total_tokens == tokens
    single = client.embeddings.create(input="x", model="tiny")
    np.testing.assert_allclose(single.data[0].embedding, expected[2], atol=1e-6)


def test_tei_embed_normalizes_and_refuses_long_input_without_truncate(served, embedder):
    headers = {"Authorization": "Bearer secret"}
    vectors = httpx.post(served + "/embed", json={"inputs": TEXTS}, headers=headers).json()
    expected = embedder.encode(TEXTS)
    np.testing.assert_allclose(vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-6)
    long = "word " * 150  # 152 tokens: over the tiny model's limit of 128
    refused = httpx.post(served + "/embed", json={"inputs": long}, headers=headers)
    assert refused.status_code == 413 and "truncate" in refused.json()["error"]["message"]
    assert httpx.post(served + "/embed", json={"inputs": long, "truncate": True}, headers=headers).status_code == 200


def test_concurrent_clients_are_batched_and_each_gets_its_own_rows(served, embedder):
    texts = [f"text number {i} " + "word " * (i % 7) for i in range(48)]
    expected = embedder.encode(texts)

    def one(i: int) -> np.ndarray:
        body = {"input": texts[2 * i : 2 * i + 2], "model": "tiny", "encoding_format": "float"}
        reply = httpx.post(served + "/v1/embeddings", json=body, headers={"Authorization": "Bearer secret"}, timeout=60)
        return np.array([d["embedding"] for d in reply.json()["data"]])

    with ThreadPoolExecutor(12) as pool:
        results = list(pool.map(one, range(24)))
    np.testing.assert_allclose(np.concatenate(results), expected, atol=1e-5)
    key = {"Authorization": "Bearer secret"}
    metrics = httpx.get(served + "/metrics", headers=key).text
    counts = {
        line.split()[0]: float(line.split()[1])
        for line in metrics.splitlines()
        if line.startswith("bertlens_batch_texts_")
    }
    assert counts["bertlens_batch_texts_sum"] / counts["bertlens_batch_texts_count"] > 2  # requests shared batches
    info = httpx.get(served + "/info", headers=key).json()
    assert (
        info["dim"] == 32
        and info["recipe"]["pooler"] == "max"
        and httpx.get(served + "/health").json()["status"] == "ok"
    )


def test_a_full_queue_refuses_at_once_and_a_failing_batch_fails_only_its_requests():
    async def scenario():
        release = asyncio.Event()
        loop = asyncio.get_running_loop()

        def slow(texts):
            asyncio.run_coroutine_threadsafe(release.wait(), loop).result()
            if "boom" in texts:
                raise RuntimeError("boom")
            return np.ones((len(texts), 2))

        batcher = DynamicBatcher([slow], max_batch_tokens=4, max_wait_ms=1, max_queue=2)
        await batcher.start()
        first = asyncio.create_task(batcher.submit(["a"], 4))  # taken by the worker, blocks in slow()
        await asyncio.sleep(0.05)
        queued = [asyncio.create_task(batcher.submit([t], 4)) for t in ("boom", "c")]
        await asyncio.sleep(0.05)
        with pytest.raises(QueueFull):
            await batcher.submit(["d"], 4)
        release.set()
        assert (await first).shape == (1, 2)
        with pytest.raises(RuntimeError, match="boom"):
            await queued[0]
        assert (await queued[1]).shape == (1, 2)  # the next batch is unaffected
        await batcher.stop()

    asyncio.run(scenario())


def test_an_onnx_export_serves_the_same_vectors(tiny_bert_dir, tmp_path):
    from bertlens.embedding.onnx_backend import OnnxEmbedder
    from bertlens.experiments.export import run_export_onnx

    recipe = Recipe(model=str(tiny_bert_dir), pooler="mean", normalize=True)
    run_export_onnx(recipe, tmp_path / "onnx", TEXTS, "t")
    with Server(create_app(OnnxEmbedder(tmp_path / "onnx"))) as url:
        reply = httpx.post(url + "/v1/embeddings", json={"input": TEXTS, "encoding_format": "float"})
        info = httpx.get(url + "/info").json()
    got = np.array([d["embedding"] for d in reply.json()["data"]])
    np.testing.assert_allclose(got, Embedder(recipe).encode(TEXTS), atol=2e-5)
    assert info["backend"] == "OnnxEmbedder"


def test_a_server_that_refuses_long_texts_says_so_and_counts_nothing(embedder):
    long = "word " * 150  # over the tiny model's limit of 128 tokens
    with Server(create_app(embedder, ServeOptions(ServeLimits(long_text="refuse")))) as url:
        refused = httpx.post(url + "/v1/embeddings", json={"input": ["fine", long]})
        tei = httpx.post(url + "/embed", json={"inputs": long, "truncate": True})
        ok = httpx.post(url + "/v1/embeddings", json={"input": ["fine"]})
        metrics = httpx.get(url + "/metrics").text
    assert refused.status_code == 413 and "1 input(s) exceed" in refused.json()["error"]["message"]
    assert tei.status_code == 413 and "refuses long texts" in tei.json()["error"]["message"]
    assert ok.status_code == 200 and "bertlens_truncated_texts_total 0.0" in metrics


class _Slow:
    """The embedder, a second slower per batch: requests stay in flight long enough to overlap."""

    def __init__(self, embedder):
        self.inner = embedder

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def encode(self, texts, *args, **kwargs):
        time.sleep(1.0)
        return self.inner.encode(texts, *args, **kwargs)


def test_a_client_over_its_in_flight_limit_gets_429_and_its_slot_back(embedder):
    with Server(create_app(_Slow(embedder), ServeOptions(ServeLimits(max_client_requests=1)))) as url:

        def post(_):
            return httpx.post(url + "/v1/embeddings", json={"input": ["a text"]}, timeout=30)

        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(post, 0)
            time.sleep(0.3)  # the first is in flight
            second = pool.submit(post, 1).result()
            first = first.result()
        after = post(2)
        metrics = httpx.get(url + "/metrics").text
    assert first.status_code == 200 and after.status_code == 200  # the slot comes back when a request ends
    assert second.status_code == 429 and second.headers["retry-after"] == "1"
    assert "in flight" in second.json()["error"]["message"]
    assert 'bertlens_requests_total{endpoint="/v1/embeddings",status="429"} 1.0' in metrics


def test_two_workers_encode_two_batches_at_once():
    async def scenario():
        inside = threading.Barrier(2, timeout=10)  # passes only when both workers are in encode together

        def encode(texts):
            inside.wait()
            return np.full((len(texts), 2), len(texts[0]))

        batcher = DynamicBatcher([encode, encode], max_batch_tokens=4, max_wait_ms=1)
        await batcher.start()
        got = await asyncio.gather(batcher.submit(["a"], 4), batcher.submit(["bb"], 4))
        await batcher.stop()
        return got

    first, second = asyncio.run(scenario())
    assert first.tolist() == [[1, 1]] and second.tolist() == [[2, 2]]


def test_a_two_worker_server_gives_concurrent_clients_their_own_rows(embedder):
    texts = [f"client text {i} " + "word " * (i % 11) for i in range(64)]
    expected = embedder.encode(texts)

    with Server(create_app(embedder, ServeOptions(ServeLimits(max_wait_ms=2), workers=2))) as url:

        def one(i: int) -> np.ndarray:
            body = {"input": texts[4 * i : 4 * i + 4], "encoding_format": "float"}
            reply = httpx.post(url + "/v1/embeddings", json=body, timeout=60)
            return np.array([d["embedding"] for d in reply.json()["data"]])

        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(one, range(16)))
        info = httpx.get(url + "/info").json()
    np.testing.assert_allclose(np.concatenate(results), expected, atol=1e-5)
    assert info["workers"] == 2


def test_free_workers_share_a_wave_of_requests_instead_of_one_taking_it_all():
    async def scenario():
        inside = threading.Barrier(2, timeout=10)  # both workers encode at once, or the test times out
        sizes = []

        def encode(texts):
            sizes.append(len(texts))
            inside.wait()
            return np.zeros((len(texts), 2))

        batcher = DynamicBatcher([encode, encode], max_batch_tokens=1000, max_wait_ms=50)
        await batcher.start()
        await asyncio.gather(*(batcher.submit([f"t{i}"], 4) for i in range(4)))  # queued before either collects
        await batcher.stop()
        return sorted(sizes)

    assert asyncio.run(scenario()) == [2, 2]


def test_input_type_puts_the_recipes_prompt_before_each_text(tiny_bert_dir):
    embedder = Embedder(Recipe(model=str(tiny_bert_dir), query_prompt="query: ", document_prompt="passage: "))
    with Server(create_app(embedder)) as url:
        query = httpx.post(url + "/v1/embeddings", json={"input": TEXTS, "input_type": "query"}).json()
        document = httpx.post(url + "/embed", json={"inputs": TEXTS, "input_type": "document", "normalize": False})
        plain = httpx.post(url + "/v1/embeddings", json={"input": TEXTS}).json()
        wrong = httpx.post(url + "/embed", json={"inputs": TEXTS, "input_type": "passage"})
    vectors = np.array([row["embedding"] for row in query["data"]])
    np.testing.assert_allclose(vectors, embedder.encode(["query: " + t for t in TEXTS]), atol=1e-6)
    np.testing.assert_allclose(np.array(document.json()), embedder.encode(["passage: " + t for t in TEXTS]), atol=1e-6)
    np.testing.assert_allclose(np.array([r["embedding"] for r in plain["data"]]), embedder.encode(TEXTS), atol=1e-6)
    assert query["usage"]["prompt_tokens"] > plain["usage"]["prompt_tokens"]  # the prompt is read, so it counts
    assert wrong.status_code == 422 and "'input_type' must be one of" in wrong.json()["error"]["message"]


def test_info_and_metrics_are_behind_the_key_and_health_is_not(served):
    for path in ("/info", "/metrics"):
        refused = httpx.get(served + path)
        assert refused.status_code == 401 and "API key" in refused.json()["error"]["message"]
        assert httpx.get(served + path, headers={"Authorization": "Bearer secret"}).status_code == 200
    assert httpx.get(served + "/health").status_code == 200


def test_an_internal_error_tells_the_client_nothing_of_the_server(embedder, caplog):
    class Broken:
        def __getattr__(self, name):
            return getattr(embedder, name)

        def token_counter(self):
            def count(texts):
                raise RuntimeError("secret path /srv/models/x")

            return count

    with Server(create_app(Broken())) as url:
        reply = httpx.post(url + "/v1/embeddings", json={"input": "a"})
    assert reply.status_code == 500
    assert "secret path" not in reply.text and "server's log" in reply.json()["error"]["message"]
    assert any("secret path" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)  # logged on the server


def test_a_draining_server_says_so_and_refuses_new_work(embedder):
    app = create_app(embedder)
    with Server(app) as url:
        app.state.service.draining = True
        health = httpx.get(url + "/health")
        refused = httpx.post(url + "/v1/embeddings", json={"input": "a"})
        app.state.service.draining = False
        served = httpx.post(url + "/v1/embeddings", json={"input": "a"})
    assert health.status_code == 503 and health.json() == {"status": "draining"}
    assert refused.status_code == 503 and "shutting down" in refused.json()["error"]["message"]
    assert refused.headers["Retry-After"] == "1" and served.status_code == 200


def test_int8_and_ubinary_encodings_return_what_they_say(served, embedder):
    key = {"Authorization": "Bearer secret"}
    got = {}
    for encoding in ("int8", "ubinary"):
        reply = httpx.post(served + "/v1/embeddings", json={"input": TEXTS, "encoding_format": encoding}, headers=key)
        got[encoding] = np.array([d["embedding"] for d in reply.json()["data"]])
    vectors = embedder.encode(TEXTS)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    np.testing.assert_array_equal(got["int8"], np.rint(unit * 127))  # the unit vector x 127, rounded
    assert np.abs(got["int8"]).max() <= 127
    cosine = (got["int8"] * unit).sum(1) / np.linalg.norm(got["int8"], axis=1)
    assert cosine.min() > 0.999  # int8 keeps the direction
    assert got["ubinary"].shape == (len(TEXTS), vectors.shape[1] // 8)
    np.testing.assert_array_equal(np.unpackbits(got["ubinary"].astype(np.uint8), axis=1), vectors > 0)


def test_embed_all_returns_every_tokens_vector_as_hugging_face_computes_it(served, tiny_bert_dir):
    import torch
    from transformers import AutoModel, AutoTokenizer

    reply = httpx.post(served + "/embed_all", json={"inputs": TEXTS}, headers={"Authorization": "Bearer secret"})
    assert reply.status_code == 200
    tokenizer, model = AutoTokenizer.from_pretrained(str(tiny_bert_dir)), AutoModel.from_pretrained(str(tiny_bert_dir))
    for text, got in zip(TEXTS, reply.json()):
        ids = tokenizer(text, return_tensors="pt")
        with torch.inference_mode():
            expected = model(**ids).last_hidden_state[0].numpy()  # [T, H], [CLS] and [SEP] included
        np.testing.assert_allclose(np.array(got), expected, atol=1e-4)
    long = httpx.post(served + "/embed_all", json={"inputs": "word " * 150}, headers={"Authorization": "Bearer secret"})
    assert long.status_code == 413 and "truncate" in long.json()["error"]["message"]


def test_token_vectors_follow_the_recipes_layer_mix(tiny_bert_dir):
    recipe = Recipe(model=str(tiny_bert_dir), layers=(1, 2), mixer="mean")
    embedder = Embedder(recipe)
    tokens = embedder.token_vectors(["a short text", "x"])
    states = embedder.encoder.forward(embedder.encoder.tokenize(["a short text"]), np.array([0]))
    expected = states.hidden[1:3, 0].mean(0).numpy()  # [T, H]: the mean of layers 1 and 2
    np.testing.assert_allclose(tokens[0], expected[: len(tokens[0])], atol=1e-5)
    assert tokens[1].shape == (3, 32)  # [CLS] x [SEP]


def test_sts_b_scored_through_http_equals_the_in_process_score(served, embedder):
    """End to end: a slice of STS-B embedded by the openai client through the server gives the Spearman of the
    recipe in process (the served vectors are the recipe's, in order, whatever the batching)."""
    from openai import OpenAI

    from bertlens.metrics.bootstrap import spearman
    from bertlens.metrics.geometry import row_cosine
    from bertlens.tasks.catalog import get_task
    from bertlens.tasks.loaders import load_catalog_task
    from tests.conftest import DATA

    test = load_catalog_task(get_task("stsb"), DATA, max_examples=40).splits["test"]
    client = OpenAI(base_url=served + "/v1", api_key="secret")

    def served_vectors(texts):
        parts = [client.embeddings.create(input=list(texts[i : i + 8]), model="tiny") for i in range(0, len(texts), 8)]
        return np.array([d.embedding for part in parts for d in part.data])

    over_http = spearman(row_cosine(served_vectors(test.texts_a), served_vectors(test.texts_b)), test.targets)
    in_process = spearman(
        row_cosine(embedder.encode(list(test.texts_a)), embedder.encode(list(test.texts_b))), test.targets
    )
    assert np.isfinite(in_process) and abs(float(over_http) - float(in_process)) < 1e-6


def test_dimensions_are_answered_only_where_the_recipe_measured_a_small_loss(tiny_bert_dir):
    from bertlens.representation.dimensions import truncate

    recipe = Recipe(model=str(tiny_bert_dir), dimension_loss=((16, 0.002), (8, 0.05)))
    embedder = Embedder(recipe)
    with Server(create_app(embedder, ServeOptions(name="tiny"))) as url:

        def ask(width):
            return httpx.post(url + "/v1/embeddings", json={"input": TEXTS, "dimensions": width}, timeout=30)

        short = ask(16)
        assert short.status_code == 200
        got = np.array([d["embedding"] for d in short.json()["data"]])
        np.testing.assert_allclose(got, truncate(embedder.encode(TEXTS), 16), atol=1e-6)
        assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)  # renormalised
        over = ask(8)
        assert over.status_code == 422 and "loses 0.0500" in over.json()["error"]["message"]
        assert "widths within the limit: 16" in over.json()["error"]["message"]
        never = ask(12)
        assert never.status_code == 422 and "never measured" in never.json()["error"]["message"]
        assert ask(32).status_code == 200  # the full width is always answered
    with Server(create_app(embedder, ServeOptions(name="tiny", any_dimensions=True))) as url:
        reply = httpx.post(url + "/v1/embeddings", json={"input": TEXTS, "dimensions": 12}, timeout=30)
        assert reply.status_code == 200 and len(reply.json()["data"][0]["embedding"]) == 12


def test_several_recipes_on_one_server_are_chosen_by_model_and_share_their_weights(tiny_bert_dir):
    from bertlens.serving.app import load_recipes

    recipes = {
        "mean": Recipe(model=str(tiny_bert_dir)),
        "cls": Recipe(model=str(tiny_bert_dir), pooler="cls", layers=(1,)),
    }
    embedders = load_recipes(recipes)
    assert embedders["mean"].encoder is embedders["cls"].encoder  # one model loaded for both
    app = create_app(embedders, ServeOptions(api_key="k", limits=ServeLimits(max_client_requests=4)))
    auth = {"Authorization": "Bearer k"}
    with Server(app) as url:
        listed = httpx.get(url + "/v1/models", headers=auth).json()
        assert [m["id"] for m in listed["data"]] == ["mean", "cls"] and listed["data"][0]["dimensions"] == 32
        assert httpx.get(url + "/v1/models").status_code == 401
        for name, embedder in embedders.items():
            reply = httpx.post(url + "/v1/embeddings", json={"input": TEXTS, "model": name}, headers=auth).json()
            np.testing.assert_allclose([d["embedding"] for d in reply["data"]], embedder.encode(TEXTS), atol=1e-6)
            assert reply["model"] == name
        tei = httpx.post(url + "/embed", json={"inputs": TEXTS, "model": "cls", "normalize": False}, headers=auth)
        np.testing.assert_allclose(tei.json(), embedders["cls"].encode(TEXTS), atol=1e-6)
        missing = httpx.post(url + "/v1/embeddings", json={"input": "a"}, headers=auth)
        assert missing.status_code == 422 and "this server runs mean, cls" in missing.json()["error"]["message"]
        unknown = httpx.post(url + "/v1/embeddings", json={"input": "a", "model": "x"}, headers=auth)
        assert unknown.status_code == 404 and "served: mean, cls" in unknown.json()["error"]["message"]
        metrics = httpx.get(url + "/metrics", headers=auth).text  # one registry for both recipes
        assert 'endpoint="/v1/embeddings",status="200"} 2' in metrics.replace(".0", "")
        info = httpx.get(url + "/info", headers=auth).json()
        assert [m["name"] for m in info["models"]] == ["mean", "cls"]
    services = app.state.services
    assert services["mean"].admission is services["cls"].admission  # one client cap, one drain


def test_a_field_a_route_does_not_read_is_refused_and_a_null_format_is_absent(served):
    with httpx.Client(base_url=served, headers={"Authorization": "Bearer secret"}) as client:
        floats = client.post("/embed", json={"inputs": TEXTS[:1], "encoding_format": "base64"})
        assert floats.status_code == 422, floats.text  # /embed answers floats only: not silently
        assert "/embed does not take 'encoding_format'" in floats.json()["error"]["message"]
        typo = client.post("/v1/embeddings", json={"input": TEXTS[:1], "dimension": 8})
        assert typo.status_code == 422 and "'dimension'" in typo.json()["error"]["message"]
        null = client.post("/v1/embeddings", json={"input": TEXTS[:1], "encoding_format": None, "user": "me"})
        assert null.status_code == 200 and isinstance(null.json()["data"][0]["embedding"], list)  # as OpenAI reads it


def test_token_vectors_have_a_size_bound_and_count_in_metrics(embedder):
    from fastapi.testclient import TestClient

    limits = ServeLimits(max_inputs=8, max_token_values=10 * embedder.dim)  # ten tokens' vectors at most
    with TestClient(create_app(embedder, ServeOptions(limits))) as client:
        small = client.post("/embed_all", json={"inputs": ["hi"]})  # [CLS] hi [SEP]: 3 tokens
        assert small.status_code == 200 and len(small.json()[0]) == 3
        big = client.post("/embed_all", json={"inputs": ["a much longer text with many more words in it"] * 2})
        assert big.status_code == 413 and "floats" in big.json()["error"]["message"]
        metrics = client.get("/metrics").text
    assert "bertlens_texts_total 1.0" in metrics and "bertlens_tokens_total 3.0" in metrics


def test_a_second_signal_stops_the_server_at_once(embedder):
    import uvicorn

    from bertlens.serving.app import draining_server

    app = create_app(embedder)
    server = draining_server(uvicorn.Config(app), app.state.service)
    server.handle_exit(15, None)
    assert app.state.service.draining and not server.should_exit  # the first drains
    server.handle_exit(15, None)
    assert server.should_exit and server.force_exit  # the second stops, without uvicorn's own graceful wait


def test_a_chunk_recipe_serves_its_query_reading_and_refuses_documents(tiny_bert_dir):
    recipe = Recipe(model=str(tiny_bert_dir), max_length=16, long_text="windows:maxp")
    app = create_app(Embedder(recipe), ServeOptions(ServeLimits(max_wait_ms=5), name="chunks"))
    long_query = " ".join(["word"] * 40)
    whole = Embedder(recipe.replace(long_text=None)).encode([long_query])[0]  # read whole, truncated at 16
    with Server(app) as url:
        got = httpx.post(f"{url}/v1/embeddings", json={"input": [long_query], "model": "chunks"}, timeout=30)
        assert got.status_code == 200
        np.testing.assert_allclose(got.json()["data"][0]["embedding"], whole, atol=1e-5)
        refused = httpx.post(
            f"{url}/v1/embeddings", json={"input": ["d"], "model": "chunks", "input_type": "document"}, timeout=30
        )
        assert refused.status_code == 422 and "bertlens index" in refused.text


def test_a_multi_vector_recipe_serves_its_kept_tokens_per_role_on_embed_all(tiny_bert_dir):
    from fastapi.testclient import TestClient

    recipe = Recipe(model=str(tiny_bert_dir), pooler="tokens", layers=(2,), include_special=False, query_augment=8)
    embedder = Embedder(recipe)
    with TestClient(create_app(embedder)) as client:
        query = client.post("/embed_all", json={"inputs": ["cats"], "input_type": "query"})
        document = client.post("/embed_all", json={"inputs": ["cats"], "input_type": "document"})
        no_role = client.post("/embed_all", json={"inputs": ["cats"]})
        pooled = client.post("/v1/embeddings", json={"input": ["cats"]})
    expected = embedder.for_queries().embed_tokens(["cats"]).of(0)  # [CLS] cats [SEP] + 5 masks, specials dropped
    assert query.status_code == 200 and np.array(query.json()[0]).shape == (6, embedder.dim)
    np.testing.assert_allclose(np.array(query.json()[0]), expected, atol=1e-5)
    np.testing.assert_allclose(np.array(document.json()[0]), embedder.embed_tokens(["cats"]).of(0), atol=1e-5)
    assert np.array(document.json()[0]).shape[0] == 1  # specials dropped: 'cats' alone
    assert no_role.status_code == 422 and "input_type" in no_role.json()["error"]["message"]
    assert pooled.status_code == 422 and "/embed_all" in pooled.json()["error"]["message"]
