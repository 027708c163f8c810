"""docs/cli.md, the full per-command reference, rendered from the parsers cyclopts derives from the commands' options
(so it cannot drift from them: tests/cli/test_reference.py fails when the file is stale).

    python -m bertlens.cli.reference > docs/cli.md
"""

from __future__ import annotations

import collections.abc
import importlib
import sys
import types
import typing

from bertlens.api.options import choices_of
from bertlens.cli.commands import COMMANDS
from bertlens.cli.derived import CommandLine

HEADER = """# Command reference

Every flag of every command, rendered from the commands' own parsers by `python -m bertlens.cli.reference >
docs/cli.md` (a test fails when this file is stale). The README shows the main path; this is the whole surface.
From Python, a command's keywords are its long flags (`--max-examples` is `max_examples`): `bertlens.sweep(...)`.
"""


def accepted_flags(name: str) -> set[str]:
    """Every flag `bertlens NAME` takes: one per option (and its other names), --config and --help."""
    from bertlens.cli.derived import flags_of

    command = importlib.import_module(f"bertlens.cli.{name}").COMMAND
    return {*flags_of(command), "--config", "--help", "-h"}


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


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
    command = importlib.import_module(f"bertlens.cli.{name}").COMMAND
    return _section(name, command.description, _derived_rows(command))


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
