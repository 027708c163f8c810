"""report.html: rendered from the same Markdown as report.md, self-contained (images embedded, no network), and,
where Chromium is installed, it renders: title, tables, decoded images, no console errors; sorting works."""

from __future__ import annotations

import base64
import re
import subprocess

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bertlens.reports.html import render_html, write_report
from tests.reports.chromium import CHROMIUM, FLAGS, assert_report_renders, needs_chromium

MARKDOWN = """# bertlens sweep: stsb

Some text with `code`.

| candidate | value |
|---|---|
| mean/L6 | 0.8203 [0.79, 0.84] |
| cls/L6 | 0.7350 [0.70, 0.76] |
| max/L2 | 0.9100 [0.88, 0.93] |

![heatmap](heatmap.png)
"""


def _report(tmp_path):
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    fig.savefig(tmp_path / "heatmap.png")
    plt.close(fig)
    return write_report(tmp_path, MARKDOWN)


def test_html_is_the_markdown_self_contained(tmp_path):
    paths = _report(tmp_path)
    assert paths["report"].read_text() == MARKDOWN
    page = paths["html"].read_text()
    assert "<title>bertlens sweep: stsb</title>" in page and page.count("<tr>") == 4
    (src,) = re.findall(r'<img src="([^"]+)"', page)
    assert src.startswith("data:image/png;base64,")
    assert base64.b64decode(src.split(",", 1)[1]) == (tmp_path / "heatmap.png").read_bytes()
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched from the network
    assert "&lt;script&gt;" in render_html("<script>alert(1)</script>", tmp_path)  # raw HTML in text is escaped


@needs_chromium
def test_chromium_renders_the_report_and_sorts_a_table(tmp_path):
    paths = _report(tmp_path)
    page = assert_report_renders(paths["html"], "bertlens sweep", ("candidate", "value"), tmp_path, "synthetic")
    assert page["images"] == 1
    probe = tmp_path / "probe.html"
    check = """<script>window.addEventListener('load', function(){
      document.querySelector('th').click();
      document.body.setAttribute('data-sorted', document.querySelector('tbody tr td').textContent);
    });</script></body>"""
    probe.write_text(paths["html"].read_text().replace("</body>", check))
    done = subprocess.run(
        [CHROMIUM, *FLAGS, "--virtual-time-budget=3000", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 'data-sorted="cls/L6"' in done.stdout, done.stderr[-1500:]
    assert "Uncaught" not in done.stderr  # no script error when sorting
