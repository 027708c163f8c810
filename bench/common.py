"""Shared helpers for benchmarks: offline set-up, the shared data location, timing."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BERTLENS_DATA", REPO.parent / "shared" / "data"))


def sts_sentences() -> list[str]:
    """Every sentence of STS-B (train, dev, test), both sides, in file order."""
    texts = []
    for split in ("train", "dev", "test"):
        with open(DATA / "stsb" / f"{split}.csv", newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                texts.extend(row[:2])
    return texts


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def best_of(function, repeats: int = 3) -> float:
    """The fastest of `repeats` timed calls, in seconds (the least disturbed by whatever else ran)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def run_measured(argv: list[str]) -> tuple[float, float]:
    """Run `bertlens ARGV` in a fresh process; (wall seconds, peak RSS in MB of that process)."""
    code = (
        "import resource, sys\n"
        "from bertlens.cli.main import main\n"
        f"code = main({argv!r})\n"
        "print('PEAK_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
        "sys.exit(code)\n"
    )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"bertlens {' '.join(argv[:2])} failed: {done.stderr[-500:]}")
    peak = next(int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("PEAK_KB"))
    return seconds, peak / 1024


def print_against_embed(measured: dict[str, tuple[float, float]], timings: dict[str, float]) -> None:
    """The table of commands run by run_measured, each as a ratio to 'bertlens embed (baseline)', and the
    sweep's own stage timings."""
    base = measured["bertlens embed (baseline)"][0]
    print("| run | wall s | ratio to embed | peak RSS MB |")
    print("|---|---|---|---|")
    for name, (seconds, peak) in measured.items():
        print(f"| {name} | {seconds:.1f} | {seconds / base:.2f}x | {peak:,.0f} |")
    print("sweep stages (s):", {k: round(v, 1) for k, v in timings.items()})


def lscpu_summary() -> str:
    """CPU model and the flags that decide the fast path (native bf16 or not)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "CPU unknown (no lscpu)"
    model = next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in out.splitlines() if line.startswith("Flags")), [])
    wanted = [
        f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_int8", "avx512_vnni", "avx_vnni") if f in flags
    ]
    return f"{model}, {os.cpu_count()} cores, flags: {' '.join(wanted) or 'none of avx2/avx512'}"
