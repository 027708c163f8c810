"""Give freed heap memory back to the operating system between the phases of a long job.

glibc keeps memory that PyTorch and NumPy freed (an encoding pass's activations) in its arenas,
so a process's resident size stays at its peak even when the next phase needs far less; then
the next phase's own memory comes on top. malloc_trim(0) returns the free arenas. Elsewhere
(no glibc) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc


def release_freed_memory() -> None:
    gc.collect()
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)
    except OSError:  # not glibc: nothing to give back this way
        pass
