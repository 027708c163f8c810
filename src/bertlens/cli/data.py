"""`bertlens data list | fetch [TASK]`: the catalog tasks, where each is read from, and their download. Its flags
are derived from `DataCommandOptions` (api/data.py; cli/derived.py); ACTION and TASK are positional."""

from __future__ import annotations

from bertlens.cli.console import say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "data",
    "bertlens.api.data:DataCommandOptions",
    "The catalog tasks (--task NAME): `list` shows each one's public source and where a run reads it from; "
    "`fetch [TASK]` downloads and converts it into the user cache once, checksummed.",
    positional=("action", "task"),
    out_is_dir=False,
)


def run(options) -> None:
    from bertlens.api.data import run_data_command

    outcome = run_data_command(options)
    if options.action == "fetch":
        for row in outcome.rows():
            say(f"fetched {row['task']} into {row['path']}")
        return
    for row in outcome.rows():
        fetchable = "@" in row["source"]
        found = row["found"] or (f"not here: downloaded on first use (or `bertlens data fetch {row['task']}`)"
                                 if fetchable else "not here: copy its files under --data-dir")  # fmt: skip
        print(f"{row['task']:<14} {row['source']:<40} {found}")
