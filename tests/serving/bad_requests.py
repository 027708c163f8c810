"""Bad requests to every route of `bertlens serve`: each must get its 4xx status and the JSON error shape
({"error": {"message", "type", "code"}}) with a message that says what to fix; never a 200, a 500 or a traceback.

Shared by tests/serving/test_bad_requests.py (asserts, against a real server on loopback) and
bench/bad_input_table.py (the table in docs/results-log.md). The server: a tiny recipe named 'tiny', API key 'secret',
at most 8 inputs of 1,000 characters, 20,000 body bytes (`LIMITS`).
"""

from __future__ import annotations

from bertlens.serving.config import ServeLimits

LIMITS = ServeLimits(max_inputs=8, max_chars=1000, max_body_bytes=20_000, max_wait_ms=20)
KEY = "secret"
NINE = b'["a", "b", "c", "d", "e", "f", "g", "h", "i"]'
WRONG_KEY = {"Authorization": "Bearer wrong"}
NO_KEY = {"Authorization": ""}
TEXT = {"Content-Type": "text/plain"}

# (name, method, path, body, headers over the good ones, status, words in the message)
REQUESTS: list[tuple[str, str, str, bytes | None, dict, int, str]] = [
    # POST /v1/embeddings (OpenAI)
    ("not JSON", "POST", "/v1/embeddings", b"{not json", {}, 400, "not valid JSON"),
    ("an empty body", "POST", "/v1/embeddings", b"", {}, 400, "not valid JSON"),
    ("a lone surrogate", "POST", "/v1/embeddings", b'{"input": "\\ud800"}', {}, 400, "not valid JSON"),
    ("not sent as JSON", "POST", "/v1/embeddings", b'{"input": "a"}', TEXT, 415, "JSON"),
    ("a JSON null", "POST", "/v1/embeddings", b"null", {}, 422, "must be a JSON object"),
    ("a JSON list", "POST", "/v1/embeddings", b"[]", {}, 422, "must be a JSON object"),
    ("input missing", "POST", "/v1/embeddings", b'{"model": "tiny"}', {}, 422, "missing 'input'"),
    ("input null", "POST", "/v1/embeddings", b'{"input": null}', {}, 422, "'input' must be a non-empty string"),
    ("input an object", "POST", "/v1/embeddings", b'{"input": {}}', {}, 422, "'input' must be a non-empty string"),
    ("input a number", "POST", "/v1/embeddings", b'{"input": 5}', {}, 422, "'input' must be a non-empty string"),
    ("input an empty list", "POST", "/v1/embeddings", b'{"input": []}', {}, 422, "'input' must be a non-empty"),
    ("input empty", "POST", "/v1/embeddings", b'{"input": ""}', {}, 422, "empty"),
    ("input blank", "POST", "/v1/embeddings", b'{"input": "   "}', {}, 422, "'input'[0] is empty"),
    ("a number among the inputs", "POST", "/v1/embeddings", b'{"input": ["a", 3]}', {}, 422, "must be a string"),
    ("a nested list", "POST", "/v1/embeddings", b'{"input": [["a"]]}', {}, 422, "must be a string"),
    ("token arrays", "POST", "/v1/embeddings", b'{"input": [101, 102]}', {}, 422, "token arrays"),
    ("dimensions never measured", "POST", "/v1/embeddings", b'{"input": "a", "dimensions": 8}', {}, 422,
     "never measured"),
    ("dimensions 0", "POST", "/v1/embeddings", b'{"input": "a", "dimensions": 0}', {}, 422, "integer from 1"),
    ("dimensions -1", "POST", "/v1/embeddings", b'{"input": "a", "dimensions": -1}', {}, 422, "integer from 1"),
    ("dimensions 1.5", "POST", "/v1/embeddings", b'{"input": "a", "dimensions": 1.5}', {}, 422, "integer from 1"),
    ("dimensions a string", "POST", "/v1/embeddings", b'{"input": "a", "dimensions": "8"}', {}, 422,
     "integer from 1"),
    ("encoding_format hex", "POST", "/v1/embeddings", b'{"input": "a", "encoding_format": "hex"}', {}, 422,
     "encoding_format"),
    ("encoding_format a number", "POST", "/v1/embeddings", b'{"input": "a", "encoding_format": 3}', {}, 422,
     "encoding_format"),
    ("input_type unknown", "POST", "/v1/embeddings", b'{"input": "a", "input_type": "x"}', {}, 422,
     "'input_type' must be one of"),
    ("nine inputs (at most 8)", "POST", "/v1/embeddings", b'{"input": ' + NINE + b"}", {}, 413, "at most 8"),
    ("a text over 1,000 characters", "POST", "/v1/embeddings", b'{"input": "' + b"a" * 1200 + b'"}', {}, 413,
     "characters"),
    ("a body over 20,000 bytes", "POST", "/v1/embeddings", b'{"input": "' + b"a" * 30_000 + b'"}', {}, 413,
     "bytes"),
    ("a wrong key", "POST", "/v1/embeddings", b'{"input": "a"}', WRONG_KEY, 401, "API key"),
    ("no key", "POST", "/v1/embeddings", b'{"input": "a"}', NO_KEY, 401, "API key"),
    ("GET instead of POST", "GET", "/v1/embeddings", None, {}, 405, "/v1/embeddings takes POST, not GET"),
    # POST /embed (TEI)
    ("not JSON", "POST", "/embed", b"{not json", {}, 400, "not valid JSON"),
    ("not sent as JSON", "POST", "/embed", b'{"inputs": "a"}', TEXT, 415, "JSON"),
    ("a JSON list", "POST", "/embed", b"[1]", {}, 422, "must be a JSON object"),
    ("inputs missing", "POST", "/embed", b"{}", {}, 422, "missing 'inputs'"),
    ("inputs empty", "POST", "/embed", b'{"inputs": ""}', {}, 422, "'inputs'[0] is empty"),
    ("a number among the inputs", "POST", "/embed", b'{"inputs": [1]}', {}, 422, "must be a string"),
    ("normalize a string", "POST", "/embed", b'{"inputs": "a", "normalize": "yes"}', {}, 422, "true or false"),
    ("truncate a string", "POST", "/embed", b'{"inputs": "a", "truncate": "no"}', {}, 422, "true or false"),
    ("a field /embed does not take", "POST", "/embed", b'{"inputs": "a", "prompt_name": "x"}', {}, 422,
     "does not take 'prompt_name'"),
    ("nine inputs (at most 8)", "POST", "/embed", b'{"inputs": ' + NINE + b"}", {}, 413, "at most 8"),
    ("a text over 1,000 characters", "POST", "/embed", b'{"inputs": "' + b"a" * 1200 + b'"}', {}, 413,
     "1200 characters"),
    ("a wrong key", "POST", "/embed", b'{"inputs": "a"}', WRONG_KEY, 401, "API key"),
    ("GET instead of POST", "GET", "/embed", None, {}, 405, "/embed takes POST"),
    # POST /embed_all (token vectors)
    ("not JSON", "POST", "/embed_all", b"{not json", {}, 400, "not valid JSON"),
    ("inputs missing", "POST", "/embed_all", b"{}", {}, 422, "missing 'inputs'"),
    ("inputs empty", "POST", "/embed_all", b'{"inputs": ""}', {}, 422, "'inputs'[0] is empty"),
    ("a number among the inputs", "POST", "/embed_all", b'{"inputs": [1]}', {}, 422, "must be a string"),
    ("nine inputs (at most 8)", "POST", "/embed_all", b'{"inputs": ' + NINE + b"}", {}, 413, "at most 8"),
    ("a wrong key", "POST", "/embed_all", b'{"inputs": "a"}', WRONG_KEY, 401, "API key"),
    # the GET routes
    ("no key", "GET", "/v1/models", None, NO_KEY, 401, "API key"),
    ("a wrong key", "GET", "/info", None, WRONG_KEY, 401, "API key"),
    ("no key", "GET", "/metrics", None, NO_KEY, 401, "API key"),
    ("POST instead of GET", "POST", "/health", b"{}", {}, 405, "/health takes GET, not POST"),
    ("DELETE", "DELETE", "/info", None, {}, 405, "/info takes GET, not DELETE"),
    ("a route that does not exist", "GET", "/v1/embedding", None, {}, 404, "no route /v1/embedding; this server has"),
]  # fmt: skip
