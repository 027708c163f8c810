"""What reading a CSV's dialect costs (io/dialect.py): CleverCSV's detection over comma, semicolon, tab and pipe, on
300 short rows and on a full 64 KiB sample, best of 3, with bertlens' whole read_dialect() beside it (the file's
sample decoded, its byte-order mark and line ends read). Detection runs once per file version.

Usage: python bench/csv_dialect.py
"""

from __future__ import annotations

import csv
import io
import tempfile
from pathlib import Path

from common import best_of, lscpu_summary

DELIMITERS = [",", ";", "\t", "|"]


def table(rows: int, words: int) -> list[tuple[str, str]]:
    text = 'film number {i}, quite {mood}; really "so" '
    return [("text", "label")] + [
        ((text * words).format(i=i, mood="good" if i % 2 else "bad"), "pos") for i in range(rows)
    ]


def main() -> None:
    import clevercsv

    from bertlens.io.dialect import _read_dialect

    print(f"CPU: {lscpu_summary()}")
    print("| sample | delimiter | bytes | CleverCSV detect | read_dialect (uncached) |")
    print("|---|---|---|---|---|")
    for name, rows in (("300 rows", table(300, 1)), ("64 KiB sample", table(3000, 8))):
        for delimiter in DELIMITERS:
            buffer = io.StringIO()
            csv.writer(buffer, delimiter=delimiter).writerows(rows)
            sample = buffer.getvalue()[:65536]
            detect = best_of(lambda s=sample: clevercsv.Detector().detect(s, delimiters=DELIMITERS))
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "f.csv"
                path.write_text(buffer.getvalue())
                whole = best_of(lambda p=path: _read_dialect.__wrapped__(str(p), 0, 0, "utf-8", None, False))
            print(f"| {name} | {delimiter!r} | {len(sample):,} | {detect * 1000:.0f} ms | {whole * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
