"""Pieces every report uses: provenance fields and Markdown tables."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bertlens.version import __version__


def provenance() -> dict:
    """What made a results file: the package version and when."""
    return {"bertlens_version": __version__, "created": time.strftime("%Y-%m-%dT%H:%M:%S")}


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table as lines."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]
