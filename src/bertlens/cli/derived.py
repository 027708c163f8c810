"""The command line of a command defined once (api/*): its parser derived from the options dataclass by cyclopts.

Each field of the options is a flag of the same name (`max_examples` is --max-examples), typed by its annotation,
with its attribute docstring as help; a bool is a switch (--normalize, no --no-normalize), a sequence takes one or
more values and may be repeated. `--config FILE` reads the options.json an earlier run wrote (flags on the command
line win), so `bertlens sweep --config out/sweep/options.json --out again` repeats a run. Why cyclopts and not
jsonargparse or tyro: docs/architecture.md, "The front door".
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from bertlens.errors import BertlensError, OptionError

if TYPE_CHECKING:
    from cyclopts import App

PYTHON_ONLY = "labels"  # fields only Python can give (a list of labels beside texts in memory): never a flag
IN_MEMORY = "<in memory"  # how options.json records data that was given in memory (api/options.py: options_record)


@dataclass(frozen=True)
class CommandLine:
    """How a command defined once meets the shell: its options class (imported when the command runs, so
    `bertlens --help` stays light), a description, and where the shell's defaults differ from Python's."""

    name: str
    options: str  # 'module:Class', e.g. 'bertlens.api.sweep:SweepOptions'
    description: str
    defaults: Mapping[str, Any] = field(default_factory=dict)  # e.g. --out's default out/sweep (None from Python)
    required: Mapping[str, str] = field(default_factory=dict)  # what the shell must give (Python need not) -> why
    # options also given by position (`bertlens embed FILE`): the options class declares them first, not keyword-only
    positional: tuple[str, ...] = ()
    out_is_dir: bool = True  # --out is a directory, checked as one before any work (embed's and search's: a file)
    python_only: tuple[str, ...] = ()  # fields of this command no flag sets, besides `labels` (longdoc: texts)
    on_interrupt: str = "interrupted; rerun the same command to resume"  # what Ctrl-C says (serve: "stopped")
    config_moved: str = ""  # said when --config holds no options.json: what the command's own --config became

    def hidden(self) -> tuple[str, ...]:
        """The fields that are no flag of this command."""
        return (PYTHON_ONLY, *self.python_only)

    def options_class(self) -> type:
        module, _, name = self.options.partition(":")
        return getattr(importlib.import_module(module), name)


def read_options_file(path: Path) -> dict[str, Any]:
    """A run's options.json as the values it sets: null entries are left to the defaults, and data a Python run held
    in memory (recorded only as a description) is refused, since the file cannot repeat it."""
    import json

    if not path.is_file():
        raise BertlensError(f"--config {path} does not exist; give the options.json a run wrote beside its outputs")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BertlensError(f"--config {path} is not JSON ({exc}); give the options.json a run wrote") from None
    if not isinstance(record, dict):
        raise BertlensError(f"--config {path} holds no options object; give the options.json a run wrote")
    for name, value in record.items():
        if isinstance(value, str) and value.startswith(IN_MEMORY) or name == PYTHON_ONLY and value is not None:
            raise BertlensError(
                f"--config {path}: {name} was given in memory from Python and the file cannot repeat it; save the "
                f"data to a file and give it with --{name.replace('_', '-')}"
            )
    return {name: value for name, value in record.items() if value is not None and name != PYTHON_ONLY}


def _options_file(path: Path):
    """cyclopts' JSON config source over `read_options_file` (cyclopts fills every option the command line left
    out, and names a key that is no option of the command)."""
    from cyclopts.config import Json

    checked = read_options_file(path)  # here, so its errors reach the user unwrapped

    class OptionsFile(Json):
        def _load_config(self, path: Path) -> dict[str, Any]:
            return checked

    return OptionsFile(path, must_exist=True, use_commands_as_keys=False)


def command_app(command: CommandLine) -> App:
    """The cyclopts app of `command`: a meta app reading --config, around the app whose one parameter is the
    options dataclass, flattened into one flag per field."""
    from cyclopts import App, Parameter

    options_class = command.options_class()
    defaults = options_class(**command.defaults)
    calls = dict(exit_on_error=False, print_error=False, result_action="return_value")  # errors reach the caller
    app = App(
        name=f"bertlens {command.name}",
        help=command.description,
        help_flags=("--help", "-h"),
        version_flags=(),
        default_parameter=Parameter(negative=(), consume_multiple=True, parse=f"^(?!({'|'.join(command.hidden())})$)"),
        **calls,
    )

    def parse(options=defaults):  # not keyword-only: the options' own positional fields stay positional
        return options

    def read_config(*tokens, config=None):
        if config is not None:
            try:
                app.config = _options_file(config)
            except BertlensError as error:
                if not command.config_moved:
                    raise
                raise BertlensError(f"{error}; {command.config_moved}") from None
        return app(tokens, **calls)

    # annotations as objects (this module's are strings, and the options class is known only now)
    parse.__annotations__ = {"options": Annotated[options_class, Parameter(name="*")]}
    read_config.__annotations__ = {
        "tokens": Annotated[str, Parameter(show=False, allow_leading_hyphen=True)],
        "config": Annotated[Path | None, Parameter(help="repeat a run: its options.json (flags given here win)")],
    }
    app.default(parse)
    app.meta.default(read_config)
    return app


def parse_options(command: CommandLine, argv: list[str]) -> Any:
    """The command line as the command's options; a cyclopts complaint (an unknown flag, a value of the wrong type)
    is an OptionError-free BertlensError worded for the shell, naming --help. `--help` raises SystemExit(0)."""
    from cyclopts import CycloptsError, UnusedCliTokensError

    app = command_app(command)
    try:
        options = app.meta(argv, result_action="return_value", exit_on_error=False, print_error=False)
    except UnusedCliTokensError as exc:
        words = " ".join(exc.unused_tokens)
        takes = (
            f"bertlens {command.name} takes one {'/'.join(p.upper() for p in command.positional)} and flags"
            if command.positional
            else f"every option of bertlens {command.name} is a flag"
        )
        raise BertlensError(f"unexpected '{words}': {takes} (see bertlens {command.name} --help)") from None
    except CycloptsError as exc:
        message = " ".join(str(exc).split()).rstrip(".")
        raise BertlensError(f"{message} (see bertlens {command.name} --help)") from None
    if options is None:  # --help was printed
        raise SystemExit(0)
    python_defaults = command.options_class()
    shell = {
        name: value
        for name, value in command.defaults.items()
        if getattr(options, name) == getattr(python_defaults, name)
    }
    options = replace(options, **shell)
    for name, why in command.required.items():
        if getattr(options, name) is None:
            raise OptionError(f"{{{name}}} is required: {why}", name)
    return options


def flags_of(command: CommandLine) -> dict[str, str]:
    """Every flag the derived parser takes -> the option it sets (what docs/cli.md lists and the tests compare)."""
    import typing

    options_class = command.options_class()
    hints = typing.get_type_hints(options_class, include_extras=True)
    flags = {}
    for name in (f.name for f in fields(options_class) if f.name not in command.hidden()):
        named = [n for extra in getattr(hints[name], "__metadata__", ()) for n in (getattr(extra, "name", None) or ())]
        for flag in named or ["--" + name.replace("_", "-")]:  # a field's own names (pretrain's --from), else its own
            flags[flag] = name
    return flags


def shell_defaults(command: CommandLine) -> Any:
    """The options a bare command line starts from (Python's defaults with the shell's own on top)."""
    return replace(command.options_class()(), **command.defaults)
