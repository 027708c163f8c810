"""The one progress-callback type every long-running library call accepts.

`progress(stage, done, total)`: a short stage name ("encoding", "probing (cosine)", "training"),
how many units are done and how many there are in this stage. A stage may carry a live detail
after " | " ("training | loss 6.213"): the stage is the part before it. A stage that counts something other
than the command's unit (texts, for most) names it with `counting` ("clustering #candidates"), so the line
says "12/48 candidates", not "12/48 texts". The CLI turns it into a
progress bar (or one line per stage when stderr is not a terminal); library code never prints.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]


DETAIL = " | "
UNIT = " #"


def counting(stage: str, unit: str) -> str:
    """The stage name for a stage that counts `unit` ("clustering", "candidates" -> "clustering #candidates")."""
    return f"{stage}{UNIT}{unit}"


def split_unit(stage: str, default: str) -> tuple[str, str]:
    """("clustering #candidates", "texts") -> ("clustering", "candidates"); a stage without a unit gets `default`."""
    name, marked, unit = stage.partition(UNIT)
    return (name, unit) if marked else (stage, default)


def split_stage(stage: str) -> tuple[str, str]:
    """("training | loss 6.2") -> ("training", "loss 6.2"); a stage without a detail gets ""."""
    name, _, detail = stage.partition(DETAIL)
    return name, detail


def silent(stage: str, done: int, total: int) -> None:
    """The default: report nothing."""
