"""`serve` as one definition: its options, their checks, the server it builds, and what Python does with it.

    import bertlens
    server = bertlens.serve(recipe="out/sweep/recipe.json")      # loads the model; nothing listens yet
    from fastapi.testclient import TestClient
    TestClient(server.app).post("/v1/embeddings", json={"input": ["a text"]}).json()   # or mount server.app
    server.run()                                                  # listen on host:port until stopped, as the command

`bertlens serve --recipe R --port 8000` parses its flags into the same `ServeCommandOptions` and runs the same server.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from bertlens.api.options import finite, one_of, python_call
from bertlens.api.recipe_options import RECIPE_FIELDS, RecipeOptions, default_precision, recipe_of
from bertlens.errors import OptionError, literal

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True, kw_only=True)
class ServeCommandOptions(RecipeOptions):
    """Every option of `bertlens serve`, by the name of its long flag; the recipe served: `RecipeOptions` (several
    recipe files serve several recipes)."""

    recipe: Sequence[Path] | None = None
    """a recipe JSON (e.g. recommended by `bertlens sweep`); the options below override it. Repeat it to serve several
    recipes, each named by its file's stem and chosen by a request's 'model' (GET /v1/models lists them); recipes of
    the same model share its weights"""
    host: str = "127.0.0.1"
    """address to bind (127.0.0.1: this machine only)"""
    port: int = 8000
    """port to listen on"""
    api_key: str | None = None
    """require 'Authorization: Bearer KEY' (also read from $BERTLENS_API_KEY)"""
    allow_no_key: bool = False
    """serve on an address other than this machine's without --api-key (refused otherwise)"""
    name: str = "bertlens"
    """the model name reported in responses"""
    backend: Literal["torch", "onnx", "openvino"] = "torch"
    """onnx (ONNX Runtime), openvino (OpenVINO): --model is a `bertlens export` directory"""
    workers: int = 1
    """batches encoded at once, each on its own thread, the cores split between them (1: lowest latency for a lone
    client; 2 gave more throughput under many concurrent clients, see docs/results-log.md)"""
    max_batch_tokens: int = 16384
    """tokens per batch"""
    max_wait_ms: float = 5.0
    """longest wait to fill a batch"""
    max_inputs: int = 256
    """texts per request"""
    max_chars: int = 20000
    """characters per text"""
    max_body_bytes: int = 4 * 1024 * 1024
    """request body size"""
    max_queue: int = 1024
    """requests waiting before 503"""
    max_token_values: int = 4_000_000
    """/embed_all: floats in one response, tokens x width (4,000,000: about 40 MB of JSON); over, 413"""
    max_client_requests: int = 0
    """requests one client address may have in flight before 429 (0: no limit)"""
    long_text_policy: Literal["truncate", "refuse"] = "truncate"
    """texts over the model's limit: truncate (counted in /metrics) or refuse (413); a recipe with --long-text windows
    embeds them whole"""
    max_dimension_loss: float = 0.01
    """answer a request's shorter 'dimensions' only where the recipe's measured loss at that width (written by
    `bertlens sweep`) is at most this (0.01: one point of Spearman); others get 422 naming the loss"""
    any_dimensions: bool = False
    """answer any 'dimensions', measured or not (cut and renormalised, as TEI does)"""

    def check(self) -> ServeCommandOptions:
        """Every check that needs no model, in the options' own names: the limits, the key, several recipes."""
        from bertlens.serving.config import ServeLimits

        finite(self)
        one_of(self)
        if not 0 < self.port < 65536:
            raise OptionError(f"{{port}} must be between 1 and 65535, got {self.port}", "port")
        recipes = (self.recipe,) if isinstance(self.recipe, str | Path) else tuple(self.recipe or ())
        checked = replace(self, recipe=tuple(Path(r) for r in recipes) or None)
        checked.server_settings(ServeLimits)  # the limits' and the key's checks
        if len(recipes) > 1:
            _check_several(checked)
        return checked

    def server_settings(self, limits_class=None):
        """The server's settings (serving.config.ServeOptions): limits, workers, the API key (or $BERTLENS_API_KEY),
        the reported name; refused: an empty key, or a key-less server reachable from other machines."""
        from bertlens.serving.config import ServeLimits, ServeOptions

        limits = (limits_class or ServeLimits)(
            self.max_batch_tokens, self.max_wait_ms, self.max_inputs, self.max_chars, self.max_body_bytes,
            self.max_queue, self.long_text_policy, self.max_client_requests, self.max_token_values,
        )  # fmt: skip
        api_key = self.api_key if self.api_key is not None else os.environ.get("BERTLENS_API_KEY")
        if api_key is not None and not api_key.strip():
            where = "{api_key}" if self.api_key is not None else "$BERTLENS_API_KEY"
            raise OptionError(
                f"{where} is empty (an unset shell variable?); give a key, or leave it out to serve without one",
                "api_key",
            )
        if self.host not in LOCAL_HOSTS and api_key is None and not self.allow_no_key:
            raise OptionError(
                f"serving on {literal(self.host)} without {{api_key}} lets anyone who can reach it use it; give "
                "{api_key}, or pass {allow_no_key}",
                "api_key",
                "allow_no_key",
            )
        return ServeOptions(limits, self.workers, api_key, self.name, self.max_dimension_loss, self.any_dimensions)


def _check_several(options: ServeCommandOptions) -> None:
    if options.backend != "torch":
        raise OptionError("several {recipe} files need the PyTorch backend (an ONNX export is one recipe)", "recipe")
    given = [f for f in RECIPE_FIELDS if getattr(options, f) not in (None, False)]
    if given:
        raise OptionError(f"{{{given[0]}}} would change every recipe; with several {{recipe}} files put each "
                          "setting in its file", given[0], "recipe")  # fmt: skip
    names = [path.stem for path in options.recipe]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise OptionError(f"two {{recipe}} files are named '{literal(twice)}': a recipe is served by its file's stem",
                          "recipe")  # fmt: skip


def check_port(host: str, port: int) -> None:
    """The address is free to listen on: said in one line before the model loads, not by uvicorn after."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise OptionError(f"cannot listen on {literal(host)}:{port} ({exc.strerror}); choose another {{port}}",
                              "port") from None  # fmt: skip


@dataclass(frozen=True)
class Server:
    """A server built and loaded, not yet listening: `app` (a FastAPI app: mount it, or call it through a test
    client), `banner` (what `bertlens serve` prints), and `run()`, which listens on host:port until stopped."""

    app: Any
    banner: str
    options: ServeCommandOptions
    settings: Any  # serving.config.ServeOptions: limits, workers, the API key in force, the reported name

    def run(self) -> None:
        from bertlens.serving.app import run_server

        check_port(self.options.host, self.options.port)
        run_server(self.app, self.options.host, self.options.port)

    def __repr__(self) -> str:
        return f"Server({self.banner})"


def build_server(options: ServeCommandOptions) -> Server:
    """Check the options (before any model loads), load the recipe(s), and build the app."""
    from bertlens.representation.recipe import Recipe
    from bertlens.serving.app import create_app, load_encoder, load_recipes, route_banner, threads_per_worker

    checked = options.check()
    settings = checked.server_settings()
    # Requests are a few texts each: the tokenizer's thread pool only adds threads that fight the model for the
    # cores. Under load it held the event loop 1.5 ms per request, 0.09 ms without it (docs/results-log.md).
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    where = f"http://{checked.host}:{checked.port}"
    if checked.recipe and len(checked.recipe) > 1:
        recipes = {path.stem: Recipe.load(path) for path in checked.recipe}
        embedders = load_recipes(recipes, workers=checked.workers, trust_remote_code=checked.trust_remote_code,
                                 device=checked.device)  # fmt: skip
        shared = len({id(e.encoder) for e in embedders.values()})
        banner = (
            f"serving {', '.join(f'{n} ({e.dim} dims)' for n, e in embedders.items())} on {len(embedders)} recipes, "
            f"{shared} model(s) loaded, on {where}; a request's 'model' chooses (GET /v1/models)"
        )
        return Server(create_app(embedders, settings), banner, checked, settings)
    one = replace(checked, recipe=checked.recipe[0] if checked.recipe else None)
    recipe = recipe_of(default_precision(one)) if one.backend == "torch" else None
    if one.backend != "torch":
        given = [f for f in ("recipe", *RECIPE_FIELDS) if f != "model" and getattr(one, f) not in (None, False)]
        if given:
            raise OptionError(
                f"{{backend}} {one.backend} serves the recipe baked into the export; leave out {{{given[0]}}}",
                "backend",
                given[0],
            )
    embedder = load_encoder(one.backend, recipe=recipe, model_dir=one.model, workers=one.workers,
                            trust_remote_code=one.trust_remote_code, device=one.device)  # fmt: skip
    banner = (
        f"serving {embedder.recipe.model} ({embedder.dim} dims, {embedder.recipe.precision}) on {where} with "
        f"{one.workers} worker(s) x {threads_per_worker(one.workers)} thread(s) ({route_banner()})"
    )
    return Server(create_app(embedder, settings), banner, checked, settings)


def serve(**options: Any) -> Server:
    """A server for a recipe (or several): the keywords are `bertlens serve`'s long flags (see
    `ServeCommandOptions`). The model loads now; `.app` is the FastAPI app, `.run()` listens until stopped."""
    return python_call(ServeCommandOptions, build_server, options)
