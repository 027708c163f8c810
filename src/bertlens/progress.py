"""The one progress-callback type every long-running library call accepts.

`progress(stage, done, total)`: a short stage name ("encoding", "probing (cosine)", "training"),
how many units are done and how many there are in this stage. A stage may carry a live detail
after " | " ("training | loss 6.213"): the stage is the part before it. The CLI turns it into a
progress bar (or one line per stage when stderr is not a terminal); library code never prints.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]


DETAIL = " | "


def split_stage(stage: str) -> tuple[str, str]:
    """("training | loss 6.2") -> ("training", "loss 6.2"); a stage without a detail gets ""."""
    name, _, detail = stage.partition(DETAIL)
    return name, detail


def silent(stage: str, done: int, total: int) -> None:
    """The default: report nothing."""
