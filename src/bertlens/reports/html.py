"""report.md and report.html from the same Markdown: one self-contained HTML file per report.

The HTML is rendered from the very text written to report.md (markdown-it, CommonMark + tables), so
both always say the same. Images the report links to are embedded as data URIs; nothing is fetched
from the network; it reads fine without JavaScript, and a few lines of inline script make tables
sortable by clicking a header (numbers sort as numbers; "0.83 [0.80, 0.86]" sorts by its first number).
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from bertlens.io.atomic import write_text

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#1d1d1f;line-height:1.45}
h1{font-size:1.6em;border-bottom:2px solid #ddd;padding-bottom:.3em}h2{font-size:1.25em;margin-top:1.6em}
table{border-collapse:collapse;margin:1em 0;font-size:.9em;display:block;overflow-x:auto}
th,td{border:1px solid #d0d0d0;padding:.3em .6em;text-align:left;vertical-align:top}th{white-space:nowrap}
td{max-width:36em}
th{background:#f3f3f3;cursor:pointer}tr:nth-child(even) td{background:#fafafa}
code{background:#f3f3f3;padding:.1em .3em;border-radius:3px}img{max-width:100%;height:auto}
footer{color:#777;font-size:.8em;margin-top:3em}
"""
SORT_SCRIPT = """
document.querySelectorAll('table').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th, col){
    th.title = 'click to sort';
    th.addEventListener('click', function(){
      var body = table.tBodies[0]; if (!body) return;
      var rows = Array.from(body.rows), up = th.dataset.order !== 'asc';
      function key(row){ var t = row.cells[col] ? row.cells[col].textContent.trim() : '';
        var m = t.match(/^[-+]?\\d*\\.?\\d+(e[-+]?\\d+)?/i); return m ? parseFloat(m[0]) : t.toLowerCase(); }
      rows.sort(function(a, b){ var x = key(a), y = key(b);
        if (typeof x === typeof y) return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
        return typeof x === 'number' ? -1 : 1; });
      rows.forEach(function(r){ body.appendChild(r); });
      th.dataset.order = up ? 'asc' : 'desc';
    });
  });
});
"""
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".svg": "image/svg+xml"}


def _embed_images(body: str, folder: Path) -> str:
    """src="file.png" -> src="data:image/png;base64,..." for files next to the report (others are left alone)."""

    def replace(match: re.Match) -> str:
        src = html.unescape(match.group(1))
        path = folder / src
        kind = IMAGE_TYPES.get(path.suffix.lower())
        if kind is None or "://" in src or not path.is_file():
            return match.group(0)
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f'src="data:{kind};base64,{data}"'

    return re.sub(r'src="([^"]+)"', replace, body)


def render_html(markdown: str, folder: Path) -> str:
    """The report's Markdown as one self-contained HTML page (images from `folder` embedded)."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    heading = next((line.lstrip("# ").strip() for line in markdown.splitlines() if line.startswith("# ")), "report")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{html.escape(heading)}</title>'
        f"<style>{STYLE}</style></head><body>\n{_embed_images(body, folder)}"
        "<footer>bertlens report: the same content as report.md; tables sort by clicking a header.</footer>"
        f"<script>{SORT_SCRIPT}</script></body></html>\n"
    )


def write_report(out: Path, markdown: str) -> dict[str, Path]:
    """Write report.md and report.html (rendered from the same text) under `out`, each atomically."""
    write_text(out / "report.md", markdown)
    write_text(out / "report.html", render_html(markdown, out))
    return {"report": out / "report.md", "html": out / "report.html"}
