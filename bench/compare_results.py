"""Compare two sweeps' results.json row by row: every figure equal, or the differences listed.

Usage: python bench/compare_results.py OLD_DIR NEW_DIR [OLD_DIR NEW_DIR ...]
(docs/results-log.md, issue #38: the figures re-run after the restructuring.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FIELDS = ("value", "ci_low", "ci_high", "validation", "tied_with_best", "scored_by", "n")


def rows(directory: str) -> tuple[dict, dict]:
    data = json.loads((Path(directory) / "results.json").read_text())
    keyed = {(r["protocol"], r["metric"], r["split"], r["candidate"]): r for r in data["rows"]}
    return data, keyed


def compare(old_dir: str, new_dir: str) -> bool:
    old, old_rows = rows(old_dir)
    new, new_rows = rows(new_dir)
    problems = (
        []
        if old["recommended"] == new["recommended"]
        else [f"recommended {old['recommended']} -> {new['recommended']}"]
    )
    if set(old_rows) != set(new_rows):
        problems.append(f"rows differ: {sorted(set(old_rows) ^ set(new_rows))[:5]}")
    for key in sorted(set(old_rows) & set(new_rows)):
        for field in FIELDS:
            if old_rows[key].get(field) != new_rows[key].get(field):
                problems.append(f"{key} {field}: {old_rows[key].get(field)} -> {new_rows[key].get(field)}")
    name = Path(new_dir).name
    print(
        f"{name}: {len(new_rows)} rows, recommended {new['recommended']}: "
        + ("identical" if not problems else f"{len(problems)} differences")
    )
    for line in problems[:20]:
        print("   ", line)
    return not problems


if __name__ == "__main__":
    pairs = sys.argv[1:]
    ok = all([compare(a, b) for a, b in zip(pairs[::2], pairs[1::2])])
    sys.exit(0 if ok else 1)
