"""The sweep's peak memory by stage: RssAnon and RssFile sampled from /proc while `bertlens sweep` runs.

Usage: python bench/sweep_memory.py --texts 100000 --model DIR [--rows all] [--every 2] [--keep DIR]

Builds bench/many_classes_data.py's 100-class cloze at `--texts` texts, runs `bertlens sweep` on it in a fresh
process (empty cache) and samples its /proc/PID/status every `--every` seconds. The stage of each sample is the last
progress line the sweep wrote (stderr is not a terminal, so it writes one line per stage). Prints the largest RssAnon
and RssFile per stage, the peak RSS (VmHWM), the wall time and the sweep's own stage timings. Why sampled, not only
the peak: the peak alone does not say which stage holds the memory (docs/results-log.md, "The 100k sweep's peak memory").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from common import DATA, lscpu_summary
from many_classes_data import cloze_task, write_csv

STAGES = ("encoding", "screening", "logistic", "probing", "scalar", "bootstrap")


def _status(pid: int) -> dict[str, int]:
    """RssAnon, RssFile and VmHWM of `pid`, in MB (empty once it has exited)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    fields = {}
    for line in lines:
        key, _, value = line.partition(":")
        if key in ("RssAnon", "RssFile", "VmHWM"):
            fields[key] = int(value.split()[0]) // 1024
    return fields


@dataclass(frozen=True)
class SampledRun:
    """One `bertlens` run sampled from /proc: exit code, wall seconds, the largest values per stage, every sample."""

    returncode: int
    wall: float
    peaks: dict[str, dict[str, int]]
    samples: list[dict]

    @property
    def peak_rss(self) -> int:
        """The process's peak RSS (VmHWM) in MB, as last sampled."""
        return max((top["VmHWM"] for top in self.peaks.values()), default=0)


def run_sampled(argv: list[str], every: float) -> SampledRun:
    """Run `bertlens ARGV` in a fresh process, its stderr passed through, sampling /proc every `every` seconds."""
    command = [str(Path(sys.executable).with_name("bertlens")), *argv]
    start = time.perf_counter()
    child = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    stage = ["start"]

    def follow() -> None:
        for line in child.stderr:
            sys.stderr.write(line)
            named = [s for s in STAGES if s in line.lower()]
            if named:
                stage[0] = named[0]

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    peaks: dict[str, dict[str, int]] = {}
    samples = []
    while child.poll() is None:
        fields = _status(child.pid)
        if fields:
            samples.append({"t": round(time.perf_counter() - start, 1), "stage": stage[0], **fields})
            top = peaks.setdefault(stage[0], {"RssAnon": 0, "RssFile": 0, "VmHWM": 0})
            for key, value in fields.items():
                top[key] = max(top[key], value)
        time.sleep(every)
    reader.join()
    return SampledRun(child.returncode, time.perf_counter() - start, peaks, samples)


def print_peaks(run: SampledRun) -> None:
    """The largest RssAnon and RssFile per stage, and the peak RSS so far, as a markdown table."""
    print("| stage | RssAnon MB | RssFile MB | VmHWM so far MB |")
    print("|---|---|---|---|")
    for name, top in run.peaks.items():
        print(f"| {name} | {top['RssAnon']:,} | {top['RssFile']:,} | {top['VmHWM']:,} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=100000)
    parser.add_argument("--model", default="default")
    parser.add_argument("--rows", help="the sweep's --rows (all scores every row; left out: the sweep's default)")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between samples")
    parser.add_argument("--keep", type=Path, help="write the task, the sweep's output and the samples here")
    args = parser.parse_args()
    rows = cloze_task(DATA, args.texts)
    print(f"cloze task: {len(rows)} texts; model {args.model}; --rows {args.rows}; {lscpu_summary()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        write_csv(rows, work / "task.csv")
        argv = [
            *("sweep", "--data", str(work / "task.csv"), "--text-col", "text", "--label-col", "label"),
            *("--model", args.model, "--precision", "auto"),
            *("--out", str(work / "sweep"), "--cache-dir", str(work / "cache")),
            *(("--rows", args.rows) if args.rows else ()),
        ]
        run = run_sampled(argv, args.every)
        (work / "rss_samples.json").write_text(json.dumps(run.samples) + "\n", encoding="utf-8")
        print(f"sweep exit {run.returncode}, wall {run.wall:.1f} s", flush=True)
        print_peaks(run)
        results = work / "sweep" / "results.json"
        if results.exists():
            timings = json.loads(results.read_text(encoding="utf-8")).get("timings", {})
            print("sweep timings:", ", ".join(f"{k} {v:.1f}" for k, v in timings.items() if isinstance(v, float)))


if __name__ == "__main__":
    main()
