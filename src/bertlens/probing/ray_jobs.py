"""A sweep on Ray (`sweep --engine ray`, issue #51): the bank encoded by Ray actors, the large probe stages as tasks.

The feature bank goes to `features/ray_bank.py`'s actors. The probe stages that are independent jobs (the ridge
screen's candidate groups, the logistic probe's folds: probing/screened_probe.py) run as Ray tasks once the task has
RAY_PROBE_ROWS example rows or more; below that the data's shipping costs more than the jobs. The jobs are the same
functions the local run calls, on the same arrays, so the scores are the local run's. Features every fold reads
(the logistic probe's candidates) are put in Ray's object store once and read zero-copy by each task; at most one
job per worker is in flight, so the driver never holds more than that many jobs' features. Before its first task
the bank's actors are stopped, giving their CPUs to the tasks (a later bank starts new ones).
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from bertlens.extras import RAY_RETRIES
from bertlens.features.bank import encoded_by
from bertlens.features.ray_bank import RayBankEngine
from bertlens.models import ModelRef
from bertlens.probing.cores import jobs_run_by

RAY_PROBE_ROWS = 5_000  # a probe stage over fewer example rows runs here (a fold's fit is then seconds at most)


class RayJobs:
    """Probe jobs as Ray tasks, one CPU each, at most `workers` in flight, results in order (JobRunner)."""

    def __init__(self, workers: int, before: Callable[[], None] = lambda: None, least_rows: int | None = None):
        self.workers, self.before = workers, before
        self.least_rows = RAY_PROBE_ROWS if least_rows is None else least_rows

    def share(self, array) -> object:
        import ray

        return ray.put(array)

    def ordered(
        self, job: Callable, calls: Iterable[tuple], total: int, on_each: Callable[[int, int], None]
    ) -> Iterator:
        import ray

        self.before()
        task = ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(_threads_of_one(job))
        pending, done = deque(), 0
        for args in calls:
            pending.append(task.remote(*args))
            del args  # in the object store now: the driver's copy goes before the next job's features are read
            if len(pending) >= self.workers:
                done += 1
                yield ray.get(pending.popleft())
                on_each(done, total)
        while pending:
            done += 1
            yield ray.get(pending.popleft())
            on_each(done, total)


def _threads_of_one(job: Callable) -> Callable:
    """`job` on one torch thread, the CPU Ray gave its task (not every core of the node)."""

    def on_one_thread(*args):
        import torch

        torch.set_num_threads(1)
        return job(*args)

    return on_one_thread


@contextlib.contextmanager
def sweep_on_ray(model: ModelRef, *, address: str | None = None, workers: int = 2) -> Iterator[None]:
    """Within this block every bank of `model` is encoded by Ray actors and the large probe stages run as Ray
    tasks (`--engine ray` of sweep and recommend); the actors stop at its end."""
    engine = RayBankEngine(model, address=address, workers=workers)
    try:
        with encoded_by(engine), jobs_run_by(RayJobs(workers, before=engine.release)):
            yield
    finally:
        engine.release()
