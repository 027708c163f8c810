"""What every command that encodes is told, declared once: the recipe (a file, then fields on top of it), the model
it loads, and what runs it (PyTorch here, a pool of Ray actors, or an ONNX export).

`recipe_of` and `encoder_of` read the options by name (every command that encodes inherits these classes), and
word their checks for each caller (OptionError).
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bertlens.errors import OptionError

# no `from __future__ import annotations`: subclasses in other modules resolve these fields' types (api/sources.py)
if TYPE_CHECKING:
    from bertlens.representation.recipe import Recipe

RECIPE_VALUE_FIELDS = (  # copied onto the recipe as given
    *("mixer", "pooler", "max_length", "precision", "normalize", "postprocess", "long_text"),
    *("query_prompt", "document_prompt"),
)
RECIPE_FIELDS = ("model", "layers", *RECIPE_VALUE_FIELDS, "exclude_special")  # every option that changes a recipe


@dataclass(frozen=True, kw_only=True)
class EncoderOptions:
    """The model a command loads, and how: what every command that encodes needs."""

    model: str | None = None
    """'default' (all-MiniLM-L6-v2), a local model directory or a hub id"""
    max_length: int | None = None
    """truncate texts to this many tokens (default: the model's limit)"""
    precision: Literal["fp32", "bf16", "auto"] | None = None
    """fp32 (exact), bf16 (fast only where the CPU has native bf16) or auto (bf16 there, fp32 elsewhere)"""
    trust_remote_code: bool = False
    """allow model code from the hub (off by default)"""
    device: str = "auto"
    """where the model runs: auto (the first CUDA GPU when torch sees one, else the CPU), cpu, cuda or cuda:N; on a
    GPU, batches are sized to its free memory"""


@dataclass(frozen=True, kw_only=True)
class RecipeOptions(EncoderOptions):
    """The representation to compute: `recipe` (a file written by `bertlens sweep` or `recommend`), then each field
    given here on top of it."""

    recipe: Path | None = None
    """a recipe JSON (e.g. recommended by `bertlens sweep`); the options below override it. From Python also a
    Recipe (a sweep's `run.recipe`)"""
    layers: str | Sequence[int] | None = None
    """'-1', '-4,-3,-2,-1', '-4:' (slice), '1:7' or 'all'; 0 is the embedding output (from Python also [-4, -1])"""
    mixer: str | None = None
    """how layers combine: single, mean, sum, concat, first_last, scalar_mix"""
    pooler: str | None = None
    """how tokens combine: cls, mean, max, attention"""
    exclude_special: bool = False
    """pool without [CLS]/[SEP]"""
    normalize: bool = False
    """L2-normalise the vectors"""
    long_text: str | None = None
    """texts over the limit: head (default truncation), tail, head_tail[:HEAD], or
    windows[:STRIDE][:mean|max|first|weighted]"""
    postprocess: Path | None = None
    """a fitted post-processor (.safetensors from `bertlens postprocess`)"""
    query_prompt: str | None = None
    """retrieval: text put before every query, e.g. 'query: ' (E5)"""
    document_prompt: str | None = None
    """retrieval: text put before every document, e.g. 'passage: ' (E5)"""


@dataclass(frozen=True, kw_only=True)
class BackendOptions:
    """What runs the recipe."""

    engine: Literal["local", "ray"] = "local"
    """ray: encode shards on a pool of Ray actors (pip install 'bertlens[ray]'); reading, resume and output stay
    local"""
    ray_address: str | None = None
    """join this Ray cluster (default: start a local Ray instance)"""
    ray_workers: int = 2
    """Ray actors, each with its own model (default 2)"""
    backend: Literal["torch", "onnx", "openvino"] = "torch"
    """onnx (ONNX Runtime), openvino (OpenVINO): --model is a directory from `bertlens export` (the recipe is inside
    it)"""


def recipe_of(options: Any) -> "Recipe":
    """The recipe file first (if any), then every option the caller set on top of it."""
    from bertlens.models import resolve_model
    from bertlens.representation.choices import parse_layers
    from bertlens.representation.recipe import Recipe

    if isinstance(options.recipe, Recipe):
        recipe = options.recipe
    else:
        recipe = Recipe.load(options.recipe) if options.recipe else Recipe()
    changes: dict = {}
    if options.model:
        changes["model"] = options.model
    if options.layers:
        layers = options.layers if isinstance(options.layers, str) else ",".join(map(str, options.layers))
        changes["layers"] = parse_layers(layers, resolve_model(changes.get("model", recipe.model)).num_layers)
        if options.mixer is None and len(changes["layers"]) > 1 and recipe.mixer == "single":
            changes["mixer"] = "mean"
    for name in RECIPE_VALUE_FIELDS:
        value = getattr(options, name)
        if value is not None and value is not False:  # a switch left off keeps the recipe's own value
            changes[name] = value
    if options.exclude_special:
        changes["include_special"] = False
    return recipe.replace(**changes) if changes else recipe


def default_precision(options: Any) -> Any:
    """`options` with precision 'auto' when neither a precision nor a recipe says one: encoding's default, bf16 only
    where this machine runs it fast (a recipe file keeps its own)."""
    if options.precision is not None or options.recipe is not None:
        return options
    return replace(options, precision="auto")


def encoder_of(options: Any):
    """The encoder the options name, built by the one factory (embedding/backends.py); engine 'ray' is the Ray pool
    of the PyTorch backend, backend 'onnx' an export directory (whose recipe is fixed)."""
    from bertlens.embedding.backends import BackendSpec, make_encoder
    from bertlens.representation.choices import EXPORT_BACKENDS

    if options.backend in EXPORT_BACKENDS:
        name = options.backend
        if options.engine == "ray":
            raise OptionError(f"{{engine}} ray runs the PyTorch backend; leave out {{backend}} {name}", "engine",
                              "backend")  # fmt: skip
        given = [
            name for name in ("recipe", *RECIPE_VALUE_FIELDS, "layers", "exclude_special") if getattr(options, name)
        ]
        if given:
            names = ", ".join("{" + name + "}" for name in given)
            raise OptionError(f"{{backend}} {name} runs the recipe baked into the export; leave out {names}",
                              "backend", *given)  # fmt: skip
        return make_encoder(BackendSpec(name, model_dir=options.model))
    options = default_precision(options)
    backend = "ray" if options.engine == "ray" else "torch"
    spec = BackendSpec(backend, recipe_of(options), device=options.device, trust_remote_code=options.trust_remote_code)
    return make_encoder(replace(spec, ray_address=options.ray_address, ray_workers=options.ray_workers))
