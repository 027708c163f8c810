"""Open a report.html in headless Chromium and check that it rendered: the page title, a table whose header has
the expected cells, every image decoded, no script error; then take a screenshot.

Chromium is Debian's `chromium` package (`.ci/run` installs it when missing); tests that use this skip without it.
`BERTLENS_SCREENSHOTS=DIR` keeps each screenshot as DIR/<name>.png (bench/report_screenshots.py uses the same code).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"]
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (.ci/run installs Debian's chromium)"
)

PROBE = """<script>window.addEventListener('load', function(){
  var imgs = Array.from(document.images);
  var decoded = imgs.filter(function(i){ return i.complete && i.naturalWidth > 0; }).length;
  var heads = Array.from(document.querySelectorAll('table')).map(function(t){
    return Array.from(t.querySelectorAll('th')).map(function(th){ return th.textContent.trim(); }).join('|'); });
  document.body.setAttribute('data-probe', JSON.stringify({title: document.title, images: imgs.length,
    decoded: decoded, tables: heads}));
});</script></body>"""


def rendered(html: Path, work: Path) -> dict:
    """What Chromium saw on the page (title, images and how many decoded, each table's header cells)."""
    import json

    probe = work / f"probe-{html.parent.name}.html"
    probe.write_text(html.read_text().replace("</body>", PROBE))
    done = subprocess.run(
        [CHROMIUM, *FLAGS, "--virtual-time-budget=3000", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    probe.unlink()
    assert "Uncaught" not in done.stderr, done.stderr[-1500:]  # no script error on the page
    found = re.search(r"data-probe=\"([^\"]*)\"", done.stdout)
    assert found, done.stderr[-1500:]
    page = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    page["tables"] = [t.split("|") for t in page["tables"]]
    return page


def screenshot(html: Path, shot: Path, width: int = 1100, height: int = 900) -> Path:
    shot.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [CHROMIUM, *FLAGS, f"--screenshot={shot}", f"--window-size={width},{height}", html.resolve().as_uri()],
        capture_output=True,
        timeout=120,
    )
    return shot


def assert_report_renders(html: Path, title: str, header: tuple[str, ...], work: Path, name: str) -> dict:
    """The report's page title starts with `title`, one table's header holds `header`, images all decode,
    no console error, and a screenshot is taken (kept under $BERTLENS_SCREENSHOTS when set)."""
    page = rendered(html, work)
    assert page["title"].startswith(title), page
    assert any(set(header) <= set(cells) for cells in page["tables"]), page["tables"]
    assert page["decoded"] == page["images"], page
    keep = os.environ.get("BERTLENS_SCREENSHOTS")
    shot = screenshot(html, Path(keep) / f"report-{name}.png" if keep else work / f"{name}.png")
    assert shot.is_file() and shot.stat().st_size > 5000
    return page
