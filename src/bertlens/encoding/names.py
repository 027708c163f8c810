"""Names of encoding choices, importable without torch (the CLI's help reads them)."""

from __future__ import annotations

SUBWORD_POOLING = ("first", "last", "mean")  # a word's vector from its subword tokens
ATTENTION_MODES = ("none", "cls", "all")  # what attention an Encoder keeps: nothing, [CLS] rows, full maps
