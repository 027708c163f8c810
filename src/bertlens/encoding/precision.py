"""Which precision is fast on this machine: bf16 pays only where the hardware has it.

Measured on this project's machines (bench/embed_speed.py, docs/results-log.md): on an AMD EPYC with
AVX512-BF16, bf16 autocast ran the default model about 3x faster than fp32; on an AMD EPYC with
AVX2 only, bf16 is emulated and ran 5x *slower*. So `auto` picks bf16 only where the CPU reports
native bf16 instructions (avx512_bf16 or amx_bf16) or a CUDA GPU supports it, and fp32 elsewhere;
an explicit bf16 on a CPU without them warns, with the slowdown measured on the spot.
"""

from __future__ import annotations

import functools
import time
import warnings
from pathlib import Path

import torch

NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux /proc/cpuinfo); empty where unknown."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def native_bf16(flags: frozenset[str] | None = None, device: str = "cpu") -> tuple[bool, str]:
    """(has fast bf16, why) for the device."""
    if device.startswith("cuda"):
        supported = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return supported, "the GPU supports bf16" if supported else "the GPU lacks bf16"
    flags = cpu_flags() if flags is None else flags
    found = [f for f in NATIVE_BF16_FLAGS if f in flags]
    if found:
        return True, f"this CPU has native bf16 ({', '.join(found)})"
    return False, f"this CPU has no native bf16 (none of {', '.join(NATIVE_BF16_FLAGS)}): bf16 would be emulated"


def choose_precision(requested: str, flags: frozenset[str] | None = None, device: str = "cpu") -> tuple[str, str]:
    """'auto' -> ('bf16' | 'fp32', why); 'fp32' and 'bf16' are kept as asked (bf16 on a CPU without it warns)."""
    if requested == "fp32":
        return "fp32", "as asked"
    fast, why = native_bf16(flags, device)
    if requested == "auto":
        return ("bf16" if fast else "fp32"), why
    if not fast and not device.startswith("cuda"):
        warnings.warn(
            f"--precision bf16: {why}; measured here a bf16 matrix product takes {bf16_slowdown():.1f}x the time of "
            "fp32. Use --precision auto (or fp32)",
            stacklevel=3,
        )
    return "bf16", "as asked"


@functools.lru_cache(maxsize=1)
def bf16_slowdown(size: int = 384, repeats: int = 20) -> float:
    """Time of a bf16 matrix product over an fp32 one of the same size on this CPU (a few milliseconds)."""
    a = torch.randn(size, size)
    seconds = {}
    for dtype in (torch.float32, torch.bfloat16):
        x = a.to(dtype)
        x @ x  # warm-up
        start = time.perf_counter()
        for _ in range(repeats):
            x @ x
        seconds[dtype] = time.perf_counter() - start
    return seconds[torch.bfloat16] / max(seconds[torch.float32], 1e-9)
