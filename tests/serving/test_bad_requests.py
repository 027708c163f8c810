"""Every bad request of tests/serving/bad_requests.py, sent to a real server on loopback: its status and the JSON
error shape with a message that says what to fix."""

from __future__ import annotations

import httpx
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.representation.recipe import Recipe
from bertlens.serving.app import ROUTES, create_app
from bertlens.serving.config import ServeOptions
from tests.serving.bad_requests import KEY, LIMITS, REQUESTS
from tests.serving.test_app import Server


@pytest.fixture(scope="module")
def served(tiny_bert_dir):
    embedder = Embedder(Recipe(model=str(tiny_bert_dir), pooler="max", normalize=True))
    with Server(create_app(embedder, ServeOptions(LIMITS, api_key=KEY, name="tiny"))) as url:
        yield url


@pytest.mark.parametrize(
    ("name", "method", "path", "body", "headers", "status", "words"),
    REQUESTS,
    ids=[f"{r[2]} {r[0]}" for r in REQUESTS],
)
def test_a_bad_request_gets_its_status_and_a_json_error(served, name, method, path, body, headers, status, words):
    sent = {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}", **headers}
    response = httpx.request(method, served + path, content=body, headers=sent, timeout=30)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert words in error["message"] and error["code"] == status, error
    assert "Traceback" not in response.text


def test_every_route_has_bad_requests():
    assert {r.path for r in ROUTES} <= {path for _, _, path, *_ in REQUESTS}
