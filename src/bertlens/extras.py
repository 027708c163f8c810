"""The optional parts of bertlens (pyproject's extras) and the one-line error for a missing one.

The core install (`pip install bertlens`) carries what `sweep`, `recommend`, `embed`, `probe` and `finetune`
need; the rest is an extra named for what it enables. Whatever needs an extra calls `require(extra, what)`
before any work, so a user without it reads which extra to install instead of a ModuleNotFoundError from
deep inside a run. The check looks the modules up without importing them (fast; nothing half-started).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from dataclasses import dataclass

from bertlens.errors import BertlensError, OptionError


@dataclass(frozen=True)
class Extra:
    modules: tuple[str, ...]  # the top-level modules the extra's packages install
    enables: str  # for the README's extras table and the error line


EXTRAS = {
    "serve": Extra(("fastapi", "uvicorn", "orjson", "prometheus_client"), "bertlens serve (the HTTP server)"),
    "onnx": Extra(
        ("onnx", "onnxruntime", "onnxscript"),
        "export --format onnx, --backend onnx, int8, recommend's own int8 trial",
    ),
    "stores": Extra(("lancedb", "chromadb"), "bertlens index and search (LanceDB, Chroma)"),
    "frameworks": Extra(("langchain_core", "llama_index.core"), "the LangChain and LlamaIndex adapters"),
    "ray": Extra(("ray",), "--engine ray (embed, index)"),
    "sentence-transformers": Extra(("sentence_transformers",), "export --format sentence-transformers"),
    "mteb": Extra(("mteb",), "bertlens.adapters.mteb (a recipe as an MTEB encoder)"),
    "datasets": Extra(("datasets",), "--task hf:NAME (a Hugging Face dataset)"),
    "catalog": Extra(("ir_datasets",), "bertlens data fetch cranfield|npl (through ir_datasets)"),
    "openvino": Extra(("openvino",), "--backend openvino, export --format openvino (with the onnx extra)"),
    "excel": Extra(("openpyxl",), "Excel workbooks (.xlsx, .xlsm) as --data, --texts, embed and index input"),
    "openvino-int8": Extra(("nncf",), "export --format openvino --quantize int8|int8-static (NNCF)"),
    "fast-probes": Extra(
        ("numba",), "multi-label sweeps on a CPU: the label sets' Newton solves' products in one compiled pass (numba)"
    ),
}
# In `all`: numba (fast-probes) caps numpy too (< 2.6 for numba 0.68), above the newest numpy released (2.5.5), so it
# replaces nobody's numpy today; a numba behind a new numpy would have to leave `all` as NNCF did.
# Left out of `all`: NNCF caps numpy (< 2.5) and networkx (<= 3.6.1), so installing it would replace a user's newer
# ones; only who asks for OpenVINO int8 gets it.
NOT_IN_ALL = ("openvino-int8",)


class MissingExtraError(BertlensError):
    """An optional part is not installed: the message names the extra that brings it."""


def _installed(module: str) -> bool:
    if sys.modules.get(module) is not None:  # imported already (or put there, as tests put a stand-in)
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module blocked (sys.modules[name] = None)
        return False


def missing_modules(extra: str) -> tuple[str, ...]:
    """The modules of `extra` that cannot be imported here (empty: the extra is installed)."""
    return tuple(module for module in EXTRAS[extra].modules if not _installed(module))


def has_extra(extra: str) -> bool:
    return not missing_modules(extra)


def require(extra: str, what: str) -> None:
    """Raise one line naming the extra to install when any of its modules is missing; `what` is the caller's
    own words for what needs it (a command and flag, or a Python name)."""
    missing = missing_modules(extra)
    if missing:
        raise MissingExtraError(
            f"{what} needs the '{extra}' extra ({', '.join(missing)} not installed): pip install 'bertlens[{extra}]'"
        )


RAY_RETRIES = 3  # a Ray actor that dies is restarted, and its task run again, up to this many times


def connect_ray(address: str | None, cpus: int, what: str = "the Ray engine (--engine ray)") -> None:
    """Join the Ray cluster at `address`, or start a local Ray instance of `cpus` CPUs, unless this process is
    already connected (every Ray engine of a run shares the one connection)."""
    require("ray", what)
    import ray

    if ray.is_initialized():
        return
    fix = "start one there (`ray start --head`), or leave out {ray_address} for a local Ray instance"
    if address and not _answers(address):  # ray.init would retry for minutes, printing its own warnings
        raise OptionError(f"{{ray_address}} {address}: no Ray cluster answers at that address; {fix}", "ray_address")
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # workers run in this environment, not a uv one
    # no address: a new local instance ("local"), even where a cluster already runs on this machine (ray.init's
    # default would join that one, and refuse the CPU count)
    try:
        ray.init(address=address or "local", num_cpus=None if address else cpus, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)  # fmt: skip
    except ConnectionError:  # 'auto' with no cluster on this machine (nor RAY_ADDRESS), a cluster that went away
        raise OptionError(
            f"{{ray_address}} {address}: no running Ray cluster was found; {fix}", "ray_address"
        ) from None


def _answers(address: str, seconds: float = 5.0) -> bool:
    """Whether something listens at HOST:PORT (or ray://HOST:PORT); True for what is not of that form ('auto'),
    which Ray resolves itself."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return True
    try:
        with socket.create_connection((host, int(port)), timeout=seconds):
            return True
    except OSError:
        return False
