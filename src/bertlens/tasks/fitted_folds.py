"""Cross-validation folds that fit the data, when the caller did not choose them.

Stratified k-fold puts every class (every label of a label set) in every fold's test part, so a class with fewer rows
than the folds cannot be cross-validated. A default fold count is bertlens' choice, not the user's: rather than
refuse a small file, the folds are lowered to what the rarest class allows (never below 2), and classes too small to
train, choose and test on (a single row; for classes two, as a stratified dev needs two training rows) are set aside by
name. A fold count the caller gave is kept, and a
class too small for it is refused as before (tasks/loaders.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_FOLDS = 10  # the folds when the caller gives none
MIN_FOLDS = 2
MIN_CLASS_ROWS = 3  # a class's rows: one to test, two to train on (the stratified dev takes one of them)
PLURAL = {"class": "classes", "label": "labels"}


@dataclass(frozen=True)
class FoldFit:
    """The folds to use, the classes set aside (their names), and what to say of both (empty: nothing changed)."""

    folds: int
    set_aside: tuple[str, ...]
    notes: tuple[str, ...]


def class_fits(count: int, folds: int) -> bool:
    """Whether a class of `count` rows can be cross-validated in `folds`: a row in every fold's test part, and two
    in every fold's training part for the stratified dev carved from it (tasks/splits.py)."""
    return count >= folds and count - math.ceil(count / folds) >= 2


def fit_folds(counts: dict[str, int], wanted: int, rows: int, what: str = "class") -> FoldFit:
    """counts: rows per class (or label); wanted: the default folds; rows: the rows cross-validated. Classes too
    small for any folds (a single row; for classes, two: a stratified dev needs two training rows) are set aside;
    the folds are lowered to what the rarest class left allows and to half the rows, never below MIN_FOLDS."""
    least = MIN_FOLDS if what == "label" else MIN_CLASS_ROWS
    alone = tuple(name for name, count in counts.items() if count < least)
    kept = {name: count for name, count in counts.items() if name not in alone}
    notes = []
    if alone:
        shown = ", ".join(repr(name) for name in alone[:10]) + (
            f" and {len(alone) - 10} more" if len(alone) > 10 else ""
        )
        noun = what if len(alone) == 1 else PLURAL[what]
        notes.append(f"{len(alone)} {noun} with fewer than {least} rows set aside (too few to train, choose and test "
                     f"on): {shown}")  # fmt: skip
    folds = wanted
    if kept:
        rarest = min(kept, key=kept.get)
        if kept[rarest] < folds:
            folds = max(MIN_FOLDS, kept[rarest])
            notes.append(
                f"{folds}-fold cross-validation, not the default {wanted}: the rarest {what}, {rarest!r}, has "
                f"{kept[rarest]} rows (choose the fold count yourself to change it)"
            )
    if rows < 2 * folds and rows >= 2 * MIN_FOLDS:
        lowered = max(MIN_FOLDS, rows // 2)
        notes.append(f"{lowered}-fold cross-validation, not {folds}: {rows} rows give two a fold at most")
        folds = lowered
    return FoldFit(folds, alone, tuple(notes))
