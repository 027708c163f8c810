"""The one exception type that reaches users as a single line (what, where, how to fix)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class BertlensError(Exception):
    """A problem with the user's input or environment; the CLI prints it as one line and exits 1."""


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """A short suffix suggesting the closest valid name, or listing them all when none is close."""
    valid = list(valid)
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.5)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return f"{hint}valid: {', '.join(valid)}"
