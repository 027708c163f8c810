"""One screenshot per report kind for docs/images/, so readers see what each command writes.

    python bench/report_screenshots.py --out docs/images out/shots/sweep-trec out/rec/sst2 ...

Each argument is a command's output directory holding report.html; its kind is read from the report's title
("bertlens sweep: trec" -> sweep). The page is checked as the tests check it (title, a table, every image
decoded, no script error) before its screenshot is kept as docs/images/report-<kind>.png. report.html is
rendered again from report.md first, so the shots show what the current code writes.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for tests.reports.chromium

from bertlens.reports.html import write_report
from tests.reports.chromium import CHROMIUM, rendered, screenshot


def kind(html: Path) -> str:
    title = re.search(r"<title>bertlens ([a-z]+)", html.read_text())
    if title is None:
        raise SystemExit(f"{html}: not a bertlens report (no 'bertlens COMMAND' title)")
    return title.group(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="output directories holding report.html")
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    parser.add_argument("--height", type=int, default=1000, help="screenshot height in pixels")
    args = parser.parse_args()
    if CHROMIUM is None:
        raise SystemExit("Chromium is not installed: apt-get install chromium")
    with tempfile.TemporaryDirectory() as work:
        for folder in args.reports:
            html = folder / "report.html"
            if not (folder / "report.md").is_file():
                raise SystemExit(f"{folder / 'report.md'} not found: run the command first")
            write_report(folder, (folder / "report.md").read_text())  # the page as this version renders it
            page = rendered(html, Path(work))
            if not page["tables"] or page["decoded"] != page["images"]:
                raise SystemExit(f"{html}: did not render (tables {page['tables']}, images {page})")
            shot = screenshot(html, args.out / f"report-{kind(html)}.png", height=args.height)
            print(f"{shot}: {page['title']} ({len(page['tables'])} tables, {page['images']} images)")


if __name__ == "__main__":
    main()
