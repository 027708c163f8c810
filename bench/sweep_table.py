"""Print Markdown rows summarising sweep outputs (for docs/results-log.md).

Usage: python bench/sweep_table.py out/sst2 out/trec ...            one row per sweep
       python bench/sweep_table.py --layers out/stsb-raw [protocol]   a layer x pooler table
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def load(directory: str) -> dict:
    return json.loads((Path(directory) / "results.json").read_text())


def summary_rows(directories: list[str]) -> None:
    print(
        "| task | model | protocol | best on test [95% CI] | recommended (by validation) and its test score "
        "| tied with best | n |"
    )
    print("|---|---|---|---|---|---|---|")
    for directory in directories:
        data = load(directory)
        for protocol in data["protocols"]:
            rows = [r for r in data["rows"] if r["protocol"] == protocol and r["value"] is not None]
            best = max(rows, key=lambda r: r["value"])
            rec = (
                next(r for r in rows if r["candidate"] == data["recommended"])
                if protocol == main_protocol(data)
                else None
            )
            rec_text = f"`{rec['candidate']}` {rec['value']:.4f}" if rec else "-"
            tied = ("yes" if rec["tied_with_best"] else "no") if rec else "-"
            print(
                f"| {data['task']} | {Path(data['model']).name} | {protocol} | `{best['candidate']}` {best['value']:.4f} "
                f"[{best['ci_low']:.4f}, {best['ci_high']:.4f}] | {rec_text} | {tied} | {best['n']} |"
            )


def main_protocol(data: dict) -> str:
    return "cosine" if "cosine" in data["protocols"] else "probe"


def layer_table(directory: str, protocol: str | None) -> None:
    data = load(directory)
    protocol = protocol or main_protocol(data)
    rows = {(r["pooler"], r["mix"]): r["value"] for r in data["rows"] if r["protocol"] == protocol}
    poolers = [p for p in ("cls", "mean", "max", "attention") if any(k[0] == p for k in rows)]
    layers = sorted({int(m[1:]) for _, m in rows if m.startswith("L")})
    print(f"{data['task']}, {Path(data['model']).name}, protocol {protocol}")
    print("| layer | " + " | ".join(poolers) + " |")
    print("|---|" + "---|" * len(poolers))
    fmt = lambda v: "undefined" if v is None else f"{v:.3f}"  # noqa: E731
    for k in layers:
        print(f"| {k} | " + " | ".join(fmt(rows.get((p, f"L{k}"))) for p in poolers) + " |")
    mixes = sorted({m for _, m in rows if not m.startswith("L")})
    for m in mixes:
        print(f"| {m} | " + " | ".join(fmt(rows.get((p, m))) if (p, m) in rows else "-" for p in poolers) + " |")


if __name__ == "__main__":
    if sys.argv[1] == "--layers":
        layer_table(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        summary_rows(sys.argv[1:])
