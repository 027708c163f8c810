"""Which command line needs which extra: one table, checked by `main` before any work (and before any model
loads), so a core install answers with the extra to install instead of an import error mid-run."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from bertlens.extras import require


@dataclass(frozen=True)
class Need:
    extra: str
    applies: Callable[[argparse.Namespace], bool]
    what: Callable[[argparse.Namespace], str]  # the user's own words: the command and the flag that needs it


def _flag(name: str, value: str) -> Callable[[argparse.Namespace], bool]:
    return lambda args: getattr(args, name, None) == value


EXPORT_EXTRAS = {
    "onnx": ("onnx",),
    "openvino": ("onnx", "openvino"),
    "sentence-transformers": ("sentence-transformers",),
}


def _export(extra: str, fmt: str) -> Need:
    """`bertlens export --format FMT` needs `extra`."""
    return Need(extra, lambda a: a.command == "export" and a.format == fmt, lambda a: f"bertlens export --format {fmt}")


NEEDS = (
    Need("serve", lambda a: a.command == "serve", lambda a: "bertlens serve"),
    Need("onnx", _flag("backend", "onnx"), lambda a: f"bertlens {a.command} --backend onnx"),
    Need("openvino", _flag("backend", "openvino"), lambda a: f"bertlens {a.command} --backend openvino"),
    *(_export(extra, fmt) for fmt, extras in EXPORT_EXTRAS.items() for extra in extras),
    Need(
        "openvino-int8",
        lambda a: a.command == "export" and a.format == "openvino" and str(a.quantize or "").startswith("int8"),
        lambda a: f"bertlens export --format openvino --quantize {a.quantize}",
    ),
    Need("stores", lambda a: a.command in ("index", "search"), lambda a: f"bertlens {a.command}"),
    Need("ray", _flag("engine", "ray"), lambda a: f"bertlens {a.command} --engine ray"),
    Need(
        "datasets",
        lambda a: str(getattr(a, "task", None) or "").startswith("hf:"),
        lambda a: f"bertlens {a.command} --task hf:NAME",
    ),
)


def check_extras(args: argparse.Namespace) -> None:
    """One line naming the first missing extra this command line needs (nothing when all are installed)."""
    for need in NEEDS:
        if need.applies(args):
            require(need.extra, need.what(args))
