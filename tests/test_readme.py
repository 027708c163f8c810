"""The README works as written: it renders as intended and its Python example runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from markdown_it import MarkdownIt

from tests.conftest import DATA, REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_renders_with_headings_outside_code_blocks():
    tokens = MarkdownIt().parse(README)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    for expected in ("Commands", "Python API", "Errors", "Tests and benchmarks"):
        assert any(h.startswith(expected) for h in headings), expected
    for fence in (t for t in tokens if t.type == "fence"):
        # a fence that swallowed prose would hold a Markdown heading or a paragraph of backticked flags
        assert not any(line.startswith("## ") for line in fence.content.splitlines()), fence.content[:80]
    assert README.count("```") % 2 == 0


PYTHON_FENCES = [t for t in MarkdownIt().parse(README) if t.type == "fence" and t.info == "python"]


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
