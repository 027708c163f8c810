"""docs/results.md, the page of current figures: every command in its fenced blocks runs as written (the bench script
exists and its options parse; a test path exists; a `bertlens` flag is one the command takes), every table names the
commit and the CPU or GPU it was measured on, and every link lands (issue #76)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from bertlens.cli.reference import accepted_flags
from tests.conftest import REPO
from tests.test_readme import _slug

PAGE = REPO / "docs" / "results.md"
TEXT = PAGE.read_text(encoding="utf-8")
HASH = re.compile(r"\b[0-9a-f]{7,40}\b")
MACHINE = re.compile(r"AMD EPYC|Intel Xeon|H100|H200|GPU|any CPU|CPU: any")

# Runs a bench script up to its parsed options and stops there: parse_args is called for real, then exits 0.
PARSE_ONLY = """
import argparse, runpy, sys
parse = argparse.ArgumentParser.parse_args
def parse_then_stop(self, args=None, namespace=None):
    parse(self, args, namespace)
    raise SystemExit(0)
argparse.ArgumentParser.parse_args = parse_then_stop
sys.argv = sys.argv[1:]
sys.path.insert(0, str(__import__("pathlib").Path(sys.argv[0]).parent))
runpy.run_path(sys.argv[0], run_name="__main__")
raise SystemExit("the script finished without parsing its options")
"""


def commands(text: str) -> list[tuple[Path, list[str]]]:
    """(working directory, argv) of every command in the page's bash fences: continuations joined, comments dropped,
    `cd DIR && ...` followed."""
    found = []
    for fence in (t for t in MarkdownIt().parse(text) if t.type == "fence" and t.info == "bash"):
        for line in fence.content.replace("\\\n", " ").splitlines():
            where, argv = REPO, []
            for token in [*shlex.split(line, comments=True), "&&"]:
                if token != "&&":
                    argv.append(token)
                elif argv[:1] == ["cd"]:
                    where, argv = where / argv[1], []
                elif argv:
                    found.append((where, argv))
                    argv = []
    return found


COMMANDS = commands(TEXT)


def test_the_page_has_commands_to_check():
    assert len(COMMANDS) >= 8
    assert {argv[1] for _, argv in COMMANDS if argv[0] == "python" and argv[1].endswith(".py")} >= {
        "bench/probe_stages.py",
        "bench/document_paths.py",
    }


@pytest.mark.parametrize(("where", "argv"), COMMANDS, ids=[" ".join(a)[:60] for _, a in COMMANDS])
def test_every_command_runs_as_written(where, argv):
    if argv[0] == "bertlens":
        flags = {a.split("=")[0] for a in argv[2:] if a.startswith("--")}
        assert flags <= accepted_flags(argv[1]), flags - accepted_flags(argv[1])
        return
    assert argv[0] == "python", f"a command the check does not know how to read: {argv}"
    if argv[1:3] == ["-m", "pytest"]:
        for path in (a for a in argv[3:] if not a.startswith("-")):
            assert (REPO / path).exists(), path
        return
    script = where / argv[1]
    assert script.is_file(), script
    assert "argparse" in script.read_text(encoding="utf-8"), f"{script}: no parser whose options could be checked"
    done = subprocess.run(
        [sys.executable, "-c", PARSE_ONLY, str(script), *argv[2:]],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-1500:]


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body up to the next heading) for every heading of the page outside code blocks."""
    tokens = MarkdownIt().parse(text)
    lines = text.splitlines()
    starts = [(t.map[0], tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]
    ends = [s for s, _ in starts[1:]] + [len(lines)]
    return [(title, "\n".join(lines[s:e])) for (s, title), e in zip(starts, ends, strict=True)]


def test_every_table_names_its_commit_and_its_cpu_or_gpu():
    tables = 0
    for title, body in sections(TEXT):
        for table in re.finditer(r"(?m)^\|.*\|\n\|[-| :]+\|\n(?:\|.*\|\n?)+", body):
            tables += 1
            header = table.group(0).splitlines()[0].lower()
            if "commit" in header and "cpu" in header:  # a table of its own provenance: every row names both
                for row in table.group(0).splitlines()[2:]:
                    assert HASH.search(row) and MACHINE.search(row), (title, row)
                continue
            before = body[: table.start()]
            assert re.search(r"Commit", before) and HASH.search(before), f"{title}: no commit before its table"
            assert MACHINE.search(before), f"{title}: no CPU or GPU before its table"
    assert tables >= 8


def test_every_link_lands_on_a_file_and_a_heading():
    for target, anchor in re.findall(r"\]\(([^)#:]+\.md)?(?:#([^)]+))?\)", TEXT):
        path = PAGE.parent / target if target else PAGE
        assert path.is_file(), target
        if anchor:
            headings = [
                line.lstrip("#") for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#")
            ]
            assert anchor in {_slug(h) for h in headings}, (target, anchor)


def test_no_figure_waits_for_its_commit():
    assert "COMMIT" not in TEXT  # a placeholder left for the commit that measured it
