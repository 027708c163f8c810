"""Many small independent jobs side by side, one core each (torch and numpy release the GIL)."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

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
