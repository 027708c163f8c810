"""Reading a request: its JSON body (authorised, typed, within the size limit) and its texts; writing a response."""

from __future__ import annotations

import base64
import hmac

import numpy as np
import orjson
from fastapi import Request
from fastapi.responses import Response

from bertlens.representation.recipe import ROLES, Recipe
from bertlens.serving.config import ServeLimits


class ApiError(Exception):
    """A refusal: its HTTP status, the message the client reads, and OpenAI's error type."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


# What each route reads from a body; any other field is refused, not ignored (a client that sends
# `encoding_format` to /embed would otherwise get floats it did not ask for and not know it).
FIELDS = {
    "/v1/embeddings": ("input", "model", "encoding_format", "dimensions", "user", "input_type"),
    "/embed": ("inputs", "normalize", "truncate", "input_type", "model"),
    "/embed_all": ("inputs", "truncate", "input_type", "model"),
}


def check_fields(payload: dict, route: str) -> None:
    """422 naming the first field `route` does not read, and the fields it does."""
    known = FIELDS[route]
    unknown = [name for name in payload if name not in known]
    if unknown:
        raise ApiError(422, f"{route} does not take '{unknown[0]}'; its fields are {', '.join(known)}")


def request_texts(payload: dict, field: str, limits: ServeLimits) -> list[str]:
    """payload[field]: a string or a list of strings, each non-empty and within the limits."""
    if field not in payload:
        raise ApiError(422, f"missing '{field}': a string or a list of strings")
    value = payload[field]
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts:
        raise ApiError(422, f"'{field}' must be a non-empty string or a non-empty list of strings")
    if len(texts) > limits.max_inputs:
        raise ApiError(413, f"'{field}' has {len(texts)} texts; at most {limits.max_inputs} per request")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ApiError(
                422,
                f"'{field}'[{i}] is a {type(text).__name__}; every input must be a string (token arrays and nested "
                "lists are not accepted)",
            )
        if not text.strip():
            raise ApiError(422, f"'{field}'[{i}] is empty; every input needs some text")
        if len(text) > limits.max_chars:
            raise ApiError(413, f"'{field}'[{i}] has {len(text)} characters; at most {limits.max_chars}")
    return texts


def prompted(payload: dict, texts: list[str], recipe: Recipe) -> list[str]:
    """The texts with the recipe's prompt for the request's `input_type` ('query' | 'document') before each."""
    role = payload.get("input_type")
    if role is None:
        return texts
    if role not in ROLES:
        raise ApiError(422, f"'input_type' must be one of {', '.join(repr(r) for r in ROLES)} or absent")
    reading = recipe.long_text_strategy
    if role == "document" and reading is not None and reading.per_piece:
        raise ApiError(
            422,
            f"this recipe reads documents as '{recipe.long_text}' (one vector per chunk): index documents with "
            "`bertlens index`; the server embeds queries",
        )
    prompt = recipe.prompt(role)
    return [prompt + text for text in texts] if prompt else texts


def check_key(request: Request, api_key: str | None) -> None:
    """A constant-time comparison, so response times do not tell how much of a guessed key was right."""
    given = request.headers.get("authorization", "").encode()
    if api_key is not None and not hmac.compare_digest(given, f"Bearer {api_key}".encode()):
        raise ApiError(401, "missing or wrong API key (send 'Authorization: Bearer KEY')", "authentication_error")


async def read_json(request: Request, limits: ServeLimits) -> dict:
    """The body as a JSON object: 415 when not JSON, 413 over the size limit (checked while reading), 400/422."""
    if "application/json" not in request.headers.get("content-type", ""):
        raise ApiError(415, "send the request body as JSON (Content-Type: application/json)")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
        raise ApiError(413, f"request body over {limits.max_body_bytes} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limits.max_body_bytes:
            raise ApiError(413, f"request body over {limits.max_body_bytes} bytes")
    try:
        payload = orjson.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "the request body is not valid JSON") from None
    if not isinstance(payload, dict):
        raise ApiError(422, "the request body must be a JSON object")
    return payload


def encode_base64(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


ENCODINGS = ("float", "base64", "int8", "ubinary")


def encoded(vectors: np.ndarray, encoding: str) -> list:
    """Each vector [n, D] as the request asked: float32 numbers, base64 of little-endian float32, int8 (the unit
    vector times 127, rounded: per text, so it does not depend on what else was in the batch; cosines of int8
    vectors track the float ones) or ubinary (the signs packed 8 to a byte, most significant bit first, as
    numpy's packbits and sentence-transformers' "ubinary": for Hamming-distance search)."""
    if encoding == "base64":
        return [encode_base64(v) for v in vectors]
    if encoding == "int8":
        unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)  # [n, D]
        return list(np.clip(np.rint(unit * 127), -127, 127).astype(np.int8))
    if encoding == "ubinary":
        return list(np.packbits(vectors > 0, axis=1))  # [n, ceil(D / 8)] uint8
    return list(vectors)


def json_response(content) -> Response:
    """Serialised once, by orjson, straight from float32 arrays: each number is the shortest text that reads back
    as the same float32, and FastAPI's per-element encoder (most of a float response's cost) is skipped."""
    return Response(orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json")
