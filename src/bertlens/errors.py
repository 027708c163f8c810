"""The one exception type that reaches users as a single line (what, where, how to fix)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable


class BertlensError(Exception):
    """A problem with the user's input or environment; the CLI prints it as one line and exits 1."""


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """A short suffix suggesting the closest valid name, or listing them all when none is close."""
    valid = list(valid)
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.5)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return f"{hint}valid: {', '.join(valid)}"


def flag(option: str) -> str:
    """A keyword's command-line flag: `max_examples` -> `--max-examples`."""
    return f"--{option.replace('_', '-')}"


class OptionError(BertlensError):
    """A bad option value, in the caller's own words: `template` names options as {name} placeholders, read as
    `max_examples` from Python and as `--max-examples` on the command line (cli/main.py renders `as_flags`). An
    option in `values` is shown set to its value: `encoding='latin-1'` from Python, `--encoding latin-1` there."""

    def __init__(self, template: str, *options: str, values: dict[str, str] | None = None) -> None:
        self.template, self.options, self.values = template, options, dict(values or {})
        super().__init__(self.as_keywords())

    def as_keywords(self) -> str:
        return self.template.format(
            **{name: f"{name}={self.values[name]!r}" if name in self.values else name for name in self.options}
        )

    def as_flags(self) -> str:
        return self.template.format(
            **{
                name: f"{flag(name)} {self.values[name]}" if name in self.values else flag(name)
                for name in self.options
            }
        )


def literal(value: object) -> str:
    """A value placed in an OptionError's template as itself (a path or a text may hold braces)."""
    return str(value).replace("{", "{{").replace("}", "}}")


def check_whole(name: str, value, lowest: int, why: str) -> None:
    """A whole-number option of at least `lowest` (a bool is not a number here; numpy integers are)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise OptionError(f"{{{name}}} must be a whole number, got {value!r}", name)
    if value < lowest:
        raise OptionError(f"{{{name}}} must be at least {lowest} ({why}), got {value}", name)


FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")  # a long flag inside a message


def keyword_words(message: str, switches: Iterable[str] = ()) -> str:
    """A message's command-line flags as a Python caller's keywords: `--text-col` -> `text_col`, and a switch (a
    bool option) as what turns it on: `--drop-invalid` -> `drop_invalid=True`."""
    switches = set(switches)

    def keyword(match: re.Match) -> str:
        name = match.group(1).replace("-", "_")
        return f"{name}=True" if name in switches else name

    return FLAG.sub(keyword, message)


def in_python_words(error: BertlensError, switches: Iterable[str] = ()) -> BertlensError | None:
    """`error` reworded for a Python caller (every flag a keyword, a switch as `name=True`), or None when its words
    are already Python's. Library code raises one error for both front ends; the command line renders an
    OptionError's flags itself (cli/main.py), and a Python entry point (api/options.py: python_call) uses this."""
    switches = set(switches)
    if isinstance(error, OptionError):
        template = error.template
        for name in set(error.options) & switches:
            template = template.replace("{" + name + "}", "{" + name + "}=True")
        reworded: BertlensError = OptionError(keyword_words(template, switches), *error.options, values=error.values)
    else:
        reworded = BertlensError(keyword_words(str(error), switches))
    return None if str(reworded) == str(error) else reworded
