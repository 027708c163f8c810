"""docs/cli.md, the full per-command reference, rendered from the commands' own parsers (so it cannot drift from
them: tests/cli/test_reference.py fails when the file is stale).

    python -m bertlens.cli.reference > docs/cli.md
"""

from __future__ import annotations

import argparse
import sys

from bertlens.cli.commands import COMMANDS
from bertlens.cli.main import build_parser

HEADER = """# Command reference

Every flag of every command, rendered from the commands' own parsers by `python -m bertlens.cli.reference >
docs/cli.md` (a test fails when this file is stale). The README shows the main path; this is the whole surface.
From Python, a command's keywords are its long flags (`--max-examples` is `max_examples`): `bertlens.sweep(...)`.
"""


def command_parser(name: str) -> argparse.ArgumentParser:
    parser = build_parser(name)
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(action: argparse.Action) -> str:
    if action.default in (None, False, argparse.SUPPRESS) or isinstance(action, argparse._StoreTrueAction):
        return ""
    return f"`{action.default}`"


def _flag(action: argparse.Action) -> str:
    if not action.option_strings:  # a positional argument
        return f"`{action.metavar or action.dest.upper()}`" + (" ..." if action.nargs in ("+", "*") else "")
    names = ", ".join(f"`{name}`" for name in action.option_strings)
    if action.nargs == 0:
        return names
    value = action.metavar or (
        "{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.dest.upper()
    )
    repeat = " (repeat)" if isinstance(action, argparse._AppendAction) else ""
    return f"{names} {_cell(value)}{repeat}"


def command_section(name: str) -> list[str]:
    parser = command_parser(name)
    rows = [
        f"| {_flag(a)} | {_default(a)} | {'**required** ' if a.required and a.option_strings else ''}{_cell(a.help or '')} |"
        for a in parser._actions
        if a.help != argparse.SUPPRESS and a.dest != "help"
    ]
    return [
        f"## `bertlens {name}`",
        "",
        _cell(parser.description or COMMANDS[name]),
        "",
        "| flag | default | what it does |",
        "|---|---|---|",
        *rows,
        "",
    ]


def render() -> str:
    lines = [HEADER]
    lines += [f"- [`{name}`](#bertlens-{name}): {summary}" for name, summary in COMMANDS.items()]
    lines.append("")
    for name in COMMANDS:
        lines += command_section(name)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render())
