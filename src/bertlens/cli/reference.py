"""docs/cli.md, the full per-command reference, rendered from the commands' own parsers (for a command defined once,
the parser cyclopts derives from its options) (so it cannot drift from
them: tests/cli/test_reference.py fails when the file is stale).

    python -m bertlens.cli.reference > docs/cli.md
"""

from __future__ import annotations

import argparse
import collections.abc
import importlib
import sys
import types
import typing

from bertlens.api.options import choices_of
from bertlens.cli.commands import COMMANDS
from bertlens.cli.derived import CommandLine
from bertlens.cli.main import build_parser

HEADER = """# Command reference

Every flag of every command, rendered from the commands' own parsers by `python -m bertlens.cli.reference >
docs/cli.md` (a test fails when this file is stale). The README shows the main path; this is the whole surface.
From Python, a command's keywords are its long flags (`--max-examples` is `max_examples`): `bertlens.sweep(...)`.
"""


def command_parser(name: str) -> argparse.ArgumentParser:
    parser = build_parser(name)
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]


def accepted_flags(name: str) -> set[str]:
    """Every flag `bertlens NAME` takes (derived commands: one per option, --config and --help)."""
    derived = getattr(importlib.import_module(f"bertlens.cli.{name}"), "COMMAND", None)
    if derived is not None:
        from bertlens.cli.derived import flags_of

        return {*flags_of(derived), "--config", "--help", "-h"}
    return {flag for action in command_parser(name)._actions for flag in action.option_strings}


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


def _derived_rows(command: CommandLine) -> list[str]:
    """A derived command's flags as cyclopts parses them (names, types, help from the options' docstrings), with the
    shell's defaults, and --config."""
    from bertlens.cli.derived import command_app, shell_defaults

    app, defaults = command_app(command), shell_defaults(command)
    arguments = [*app.assemble_argument_collection(parse_docstring=True), *app.meta.assemble_argument_collection()]
    rows = []
    for argument in arguments:
        if not argument.show:
            continue
        option = argument.field_info.name
        default = getattr(defaults, option, None)
        is_switch = argument.hint is bool
        shown = "" if default is None or default == () or is_switch else f"`{_value(default)}`"
        value = "" if is_switch else " " + _placeholder(option, argument.hint)
        required = "**required** " if option in command.required else ""
        flag = f"`{argument.names[0]}`{value}"
        if option in command.positional:  # given by position, or by its flag
            flag = f"`{option.upper()}` (or {flag})"
        rows.append(f"| {flag} | {shown} | {required}{_cell(argument.parameter.help or '')} |")
    return rows


def _value(default: object) -> str:
    return ",".join(map(str, default)) if isinstance(default, tuple | list) else str(default)


def _placeholder(option: str, hint: object) -> str:
    """{a,b} for a choice, NAME ... for one or more values, NAME for one."""
    allowed = choices_of(hint)
    if allowed is not None:
        return _cell("{" + ",".join(allowed) + "}")
    return option.upper() + (" ..." if _is_sequence(hint) else "")


def _is_sequence(hint: object) -> bool:
    """Whether the command line reads one or more values: cyclopts takes the first type of a union it can parse,
    so `str | Sequence[int]` reads one string."""
    first = typing.get_args(hint)[0] if typing.get_origin(hint) in (typing.Union, types.UnionType) else hint
    return typing.get_origin(first) in (list, tuple, collections.abc.Sequence)


def command_section(name: str) -> list[str]:
    module = importlib.import_module(f"bertlens.cli.{name}")
    derived = getattr(module, "COMMAND", None)
    if derived is not None:
        return _section(name, derived.description, _derived_rows(derived))
    parser = command_parser(name)
    rows = [
        f"| {_flag(a)} | {_default(a)} | {'**required** ' if a.required and a.option_strings else ''}{_cell(a.help or '')} |"
        for a in parser._actions
        if a.help != argparse.SUPPRESS and a.dest != "help"
    ]
    return _section(name, parser.description or COMMANDS[name], rows)


def _section(name: str, description: str, rows: list[str]) -> list[str]:
    return [
        f"## `bertlens {name}`",
        "",
        _cell(description),
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
