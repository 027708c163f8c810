"""The linguistic probing tasks by name, importable without numpy (the CLI's help lists them)."""

from __future__ import annotations

from collections.abc import Callable

from bertlens.tasks.conllu import Word

TOKEN_TASKS: dict[str, Callable[[Word], str]] = {
    "upos": lambda w: w.upos,
    "xpos": lambda w: w.xpos,
    "deprel": lambda w: w.relation,
}
SENTENCE_TASKS = (
    "sentence_length",
    "word_content",
    "tree_depth",
    "top_dependents",
    "tense",
    "subject_number",
    "object_number",
    "bigram_shift",
    "coordination_inversion",
)
ALL_TASKS = tuple(TOKEN_TASKS) + SENTENCE_TASKS
