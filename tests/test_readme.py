"""The README works as written: it renders as intended and its Python example runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from markdown_it import MarkdownIt

from tests.conftest import DATA, REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
GUIDE = (REPO / "docs" / "guide.md").read_text(encoding="utf-8")  # the README's depth: its examples run too


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (README, ("Install", "The main path", "Every command", "Errors", "Tests and benchmarks")),
        (GUIDE, ("What it answers", "Commands", "Python API", "Models", "Errors")),
    ],
    ids=["README", "guide"],
)
def test_the_docs_render_with_headings_outside_code_blocks(text, expected):
    tokens = MarkdownIt().parse(text)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    for name in expected:
        assert any(h.startswith(name) for h in headings), name
    for fence in (t for t in tokens if t.type == "fence"):
        # a fence that swallowed prose would hold a Markdown heading or a paragraph of backticked flags
        assert not any(line.startswith("## ") for line in fence.content.splitlines()), fence.content[:80]
    assert text.count("```") % 2 == 0


PYTHON_FENCES = [
    t for doc in (README, GUIDE) for t in MarkdownIt().parse(doc) if t.type == "fence" and t.info == "python"
]


@pytest.mark.parametrize("fence", PYTHON_FENCES, ids=[f"python-example-{i}" for i in range(len(PYTHON_FENCES))])
def test_python_examples_run(tmp_path, fence):
    code = "\n".join(line for line in fence.content.splitlines() if "out/demo-stsb" not in line)  # needs `make demo`
    env = {**os.environ, "HOME": str(tmp_path), "BERTLENS_DATA": str(DATA), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    if "run_sweep" in code:
        assert "/" in done.stdout  # "<pooler>/<mix> <basis>" printed by the example


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but '-' dropped, spaces as '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_leads_with_the_main_path_and_every_link_lands():
    """At most 300 lines (the full reference lives in docs/); every relative link names a file that exists, and
    every #anchor a heading of that file."""
    assert len(README.splitlines()) <= 300
    for target in re.findall(r"\]\(([^)#]+\.md)(?:#([^)]+))?\)", README):
        path, anchor = REPO / target[0], target[1]
        assert path.is_file(), target
        if anchor:
            headings = [line.lstrip("#") for line in path.read_text().splitlines() if line.startswith("#")]
            assert anchor in {_slug(h) for h in headings}, target
