"""Console helpers shared by commands: a rich progress bar with rate and ETA on stderr, the cache location."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

STDERR = Console(stderr=True)


def cache_dir(explicit: Path | None) -> Path:
    """--cache-dir, else $BERTLENS_CACHE, else ~/.cache/bertlens (feature banks live there)."""
    return explicit or Path(os.environ.get("BERTLENS_CACHE", Path.home() / ".cache" / "bertlens"))


@contextlib.contextmanager
def progress_bar(label: str, unit: str = "texts", enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """Yields update(done, total, stage=None); shows count, rate in `unit`/s, elapsed time and ETA."""
    if not enabled:
        yield lambda done, total, stage=None: None
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=STDERR, transient=False) as progress:
        task = progress.add_task(label, total=None, rate="")

        def update(done: int, total: int, stage: str | None = None) -> None:
            speed = progress.tasks[0].speed
            rate = f"{speed:,.0f} {unit}/s" if speed else ""
            if stage is not None and stage != progress.tasks[0].description:
                progress.reset(task, description=stage, total=total)  # a new stage gets its own rate and ETA
            progress.update(task, completed=done, total=total, rate=rate)

        yield update
