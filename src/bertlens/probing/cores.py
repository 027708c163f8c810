"""Independent jobs: side by side on this machine's cores (torch and numpy release the GIL), or, inside
`jobs_run_by(runner)` (sweep --engine ray: probing/ray_jobs.py), as tasks on a cluster when the data is large."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from typing import Protocol

import torch


def map_on_cores(fn: Callable, items: list, on_each: Callable[[int, int], None] | None = None) -> list:
    """[fn(item) for item in items], computed in threads with one torch thread each (small tensors: side by side
    beats one job on every core); results in input order, `on_each(done, total)` after each one in that order."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    out = []
    try:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for result in pool.map(fn, items):
                out.append(result)
                if on_each is not None:
                    on_each(len(out), len(items))
    finally:
        torch.set_num_threads(threads)
    return out


def in_turn(job: Callable, calls: Iterable[tuple], total: int, on_each: Callable[[int, int], None]) -> Iterator:
    """job(*args) for args in calls, one after another here, each yielded as it is done; `on_each(done, total)`
    after each (the local counterpart of JobRunner.ordered). Yielded, not collected: a caller that stores each
    result into its own arrays keeps no job's output alive past the next job (a list of them fragmented the heap
    of a 100k-row screen into a 16.5 GB peak)."""
    for done, args in enumerate(calls, start=1):
        result = job(*args)
        del args  # this job's inputs (its features) go before the next job's are read
        yield result
        on_each(done, total)


class JobRunner(Protocol):
    """Runs a probe stage's jobs elsewhere (probing/ray_jobs.py: RayJobs)."""

    least_rows: int  # below this many example rows a stage runs here: shipping its data costs more than it saves

    def share(self, array) -> object:
        """A handle that every job can read `array` through without its own copy."""

    def ordered(
        self, job: Callable, calls: Iterable[tuple], total: int, on_each: Callable[[int, int], None]
    ) -> Iterator:
        """job(*args) for args in calls, run elsewhere, yielded in order; `on_each(done, total)` after each."""


_RUNNER: ContextVar = ContextVar("job_runner", default=None)


@contextlib.contextmanager
def jobs_run_by(runner: JobRunner) -> Iterator[None]:
    """Within this block, the probe stages that are large enough run their jobs through `runner`."""
    token = _RUNNER.set(runner)
    try:
        yield
    finally:
        _RUNNER.reset(token)


def runner_for(rows: int) -> JobRunner | None:
    """The runner of this run when one is set and a stage over `rows` example rows is worth sending; else None."""
    runner = _RUNNER.get()
    return runner if runner is not None and rows >= runner.least_rows else None
