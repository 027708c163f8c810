"""Errors in the caller's own words: a check names the option, and each front end words it its own way.

`OptionError` (errors.py) reads `max_examples must be ...` from Python and `--max-examples must be ...` on the
command line. The checks of a command's options live with the options (api/<command>.py) and run before any model
loads; the loaders below check the same keywords with the same `check_whole`.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bertlens.errors import BertlensError, OptionError, check_whole, in_python_words


def at_least(options: Any, name: str, lowest: int, why: str) -> None:
    """A whole-number option (None: not given) of at least `lowest`."""
    value = getattr(options, name)
    if value is not None:
        check_whole(name, value, lowest, why)


def finite(options: Any) -> None:
    """No option holds nan or inf (a float read from a flag or a keyword)."""
    for field in dataclasses.fields(options):
        value = getattr(options, field.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise OptionError(f"{{{field.name}}} must be a finite number, got {value}", field.name)


def choices_of(hint: Any) -> tuple | None:
    """The values a `Literal[...]` (or `Literal[...] | None`) annotation allows; None for any other type."""
    for part in typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,):
        if typing.get_origin(part) is typing.Literal:
            return typing.get_args(part)
    return None


def one_of(options: Any) -> None:
    """Every option typed as a choice (`Literal[...]`, which the command line checks by itself) holds one of its
    values when it comes from Python too."""
    hints = typing.get_type_hints(type(options))
    for field in dataclasses.fields(options):
        allowed, value = choices_of(hints[field.name]), getattr(options, field.name)
        if allowed is not None and value is not None and value not in allowed:
            raise OptionError(f"{{{field.name}}} must be one of {', '.join(allowed)}, got {value!r}", field.name)


def unknown_options(cls: type, given: Mapping[str, Any]) -> None:
    """A keyword the command does not take is one line naming the closest one (a typo must not be ignored)."""
    from bertlens.errors import did_you_mean

    names = [f.name for f in dataclasses.fields(cls)]
    for key in given:
        if key not in names:
            raise BertlensError(f"unknown option '{key}': {did_you_mean(key, names)}")


def switches(cls: type) -> set[str]:
    """The options of `cls` that are switches (bool flags): a Python caller turns one on with `name=True`."""
    return {f.name for f in dataclasses.fields(cls) if f.type in (bool, "bool")}


def python_call(cls: type, run: Callable[[Any], Any], options: Mapping[str, Any], *leading: Any) -> Any:
    """A command called from Python: its keywords checked, its options built (`leading`: positional ones) and run,
    and any error in the caller's words (errors.in_python_words): the library's checks are shared with the command
    line, whose words they may carry."""
    unknown_options(cls, options)
    try:
        return run(cls(*leading, **options))
    except BertlensError as error:
        reworded = in_python_words(error, switches(cls))
        if reworded is None:
            raise
        raise reworded from None


def options_record(options: Any) -> dict:
    """The options as JSON values (saved beside a run's outputs as options.json): paths as strings, data given in
    memory as a short description (it is not repeatable from the file alone, and says so)."""
    record = {}
    for field in dataclasses.fields(options):
        value = getattr(options, field.name)
        if isinstance(value, Path):
            value = str(value)
        elif isinstance(value, tuple | list) and all(isinstance(v, str | Path) for v in value):
            value = [str(v) for v in value]  # files (distill --texts A B) or names; a long list of texts: below
        if value is not None and not isinstance(value, str | int | float | bool | list):
            value = f"<in memory: {type(value).__name__}>"
        elif isinstance(value, list) and len(value) > 20:
            value = f"<in memory: {len(value)} items>"
        record[field.name] = value
    return record
