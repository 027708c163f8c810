"""Console helpers shared by commands: progress on stderr (a rich bar with rate and ETA on a terminal,
a plain line per stage and every 30 s otherwise), the cache location, tables of rows."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from bertlens.progress import Progress as ProgressFn
from bertlens.progress import silent, split_stage, split_unit

STDERR = Console(stderr=True)
PLAIN_EVERY = 30.0  # seconds between progress lines when stderr is not a terminal


def say(message: str) -> None:
    """One plain line on stderr (no markup, no wrapping)."""
    STDERR.print(message, markup=False, soft_wrap=True, highlight=False)


def _plain_progress(label: str, unit: str) -> ProgressFn:
    """For logs and CI: a line when a stage starts, then at most every PLAIN_EVERY seconds, and when it ends."""
    last = {"stage": None, "at": 0.0, "start": time.monotonic()}

    def update(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        stage, detail = split_stage(stage)
        stage, counted = split_unit(stage, unit)
        new_stage = stage != last["stage"]
        if new_stage:
            last.update(stage=stage, start=now, first=done)
        if new_stage or now - last["at"] >= PLAIN_EVERY or done >= total:
            elapsed, progressed = now - last["start"], done - last["first"]
            speed = progressed / elapsed if elapsed >= 1.0 and progressed > 0 else 0.0
            rate = f" ({speed:,.1f}/s, ETA {_clock((total - done) / speed)})" if speed and done < total else ""
            say(f"{label}: {stage} {done}/{total} {counted}{rate}" + (f", {detail}" if detail else ""))
            last["at"] = now

    return update


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"


@contextlib.contextmanager
def progress_bar(label: str, unit: str = "texts", enabled: bool = True) -> Iterator[ProgressFn]:
    """Yields update(stage, done, total); shows count, rate in `unit`/s, elapsed time and ETA."""
    if not enabled:
        yield silent
        return
    if not STDERR.is_terminal:
        yield _plain_progress(label, unit)
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

        def update(stage: str, done: int, total: int) -> None:
            stage, detail = split_stage(stage)
            stage, counted = split_unit(stage, unit)
            speed = progress.tasks[0].speed
            rate = ", ".join(part for part in (f"{speed:,.1f} {counted}/s" if speed else "", detail) if part)
            description = f"{label}: {stage}"
            if description != progress.tasks[0].description:
                progress.reset(task, description=description, total=total)  # a new stage gets its own rate and ETA
            progress.update(task, completed=done, total=total, rate=rate)

        yield update


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    table = Table(title=title)
    for column in header:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    STDERR.print(table)
