"""`data` as one definition: the catalog tasks, where each is read from, and their download.

    import bertlens
    bertlens.data("list").to_pandas()      # task, description, source, found (where a run reads it now)
    bertlens.data("fetch", "stsb")         # downloads and converts it into the user cache, verified

`bertlens data list` and `bertlens data fetch stsb` parse into the same `DataCommandOptions` and call the same
`run_data_command` (tasks/catalog_fetch.py does the work).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from bertlens.api.options import python_call
from bertlens.api.results import RowsResult


@dataclass(frozen=True)
class DataAction:
    """The command's positional options (`bertlens data fetch stsb`): declared apart so that they come first."""

    action: Literal["list", "fetch"] = "list"
    """list: every catalog task, its public source and where a run reads it from now; fetch: download and convert
    tasks into the user cache ($BERTLENS_CACHE/data, default ~/.cache/bertlens/data)"""
    task: str | None = None
    """fetch: the task(s), comma-separated (default: every task with a public source)"""


@dataclass(frozen=True, kw_only=True)
class DataCommandOptions(DataAction):
    """Every option of `bertlens data`, by the name of its long flag."""

    data_dir: str | None = None
    """list: also look here (default $BERTLENS_DATA)"""

    def check(self) -> DataCommandOptions:
        from bertlens.errors import OptionError, did_you_mean, literal
        from bertlens.tasks.catalog import CATALOG

        for name in self.tasks():
            if name not in CATALOG:
                raise OptionError(f"{{task}} '{literal(name)}' is not a catalog task: {did_you_mean(name, CATALOG)}",
                                  "task")  # fmt: skip
        return self

    def tasks(self) -> tuple[str, ...]:
        from bertlens.tasks.catalog_sources import SOURCES

        if self.task is None:
            return tuple(SOURCES) if self.action == "fetch" else ()
        return tuple(t.strip() for t in self.task.split(",") if t.strip())


@dataclass(frozen=True)
class DataRun(RowsResult):
    """What `bertlens data` did: the catalog as rows (list), or each task fetched and where it now is."""

    entries: tuple[dict, ...]
    options: DataCommandOptions

    def rows(self) -> list[dict]:
        return [dict(row) for row in self.entries]


def run_data_command(options: DataCommandOptions) -> DataRun:
    """List the catalog, or fetch tasks into the user cache."""
    from dataclasses import asdict

    from bertlens.tasks.catalog_fetch import catalog_entries, fetch

    checked = options.check()
    if checked.action == "list":
        return DataRun(tuple(asdict(e) for e in catalog_entries(checked.data_dir)), checked)
    fetched = tuple({"task": name, "path": str(fetch(name))} for name in checked.tasks())
    return DataRun(fetched, checked)


def data(action: str = "list", task: str | None = None, **options: Any) -> DataRun:
    """The catalog tasks: `data("list")` shows where each comes from, `data("fetch", "stsb")` downloads one."""
    return python_call(DataCommandOptions, run_data_command, options, action, task)
