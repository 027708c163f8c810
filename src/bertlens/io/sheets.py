"""Excel workbooks (.xlsx, .xlsm) read as tables: one sheet's header and rows, with cells as the text the rest of
bertlens reads from a CSV.

Labelled data lives in workbooks more than anywhere else. openpyxl (the reader pandas uses for .xlsx) reads the cells
typed, which is what makes a workbook safer than its CSV export: a number stays a number (no decimal mark to guess),
a formula is read as the value the spreadsheet last computed for it, and a date is known to be a date. A date in a
label column is refused: it is what a spreadsheet makes of labels like '3-4' or 'SEPT2', and reading it back as a
class would be a silent change of labels. The header is the first row with a value; an empty (or merged-away) header
cell is named 'Unnamed: K' as pandas names it; empty rows are skipped and counted, and trailing ones (a sheet's
formatted but empty tail) dropped.
"""

from __future__ import annotations

import datetime
import functools
import math
from dataclasses import dataclass
from pathlib import Path

from bertlens.errors import BertlensError, OptionError, did_you_mean, literal
from bertlens.extras import require

WORKBOOKS = (".xlsx", ".xlsm")
Cell = str | float | int | bool | datetime.datetime | datetime.date | datetime.time | None


@dataclass(frozen=True)
class Sheet:
    """One sheet as read: its name, the workbook's sheet names, the header (names) and the first non-empty row it
    was read from (sheet row number, cells: data when the sheet has no header), the other non-empty rows, and how
    many empty rows between them were skipped."""

    name: str
    names: tuple[str, ...]
    header: tuple[str, ...]
    first: tuple[int, tuple[Cell, ...]]
    rows: tuple[tuple[int, tuple[Cell, ...]], ...]
    skipped: int

    def describe(self, path: Path) -> str:
        """One line for the report: which sheet, how many rows, and how to choose another."""
        which = f"sheet {self.name!r} of {path.name}"
        others = (
            f" (sheet {self.names.index(self.name) + 1} of {len(self.names)}: {', '.join(map(repr, self.names))}; "
            "--sheet chooses)"
            if len(self.names) > 1
            else ""
        )
        empty = f", {self.skipped} empty rows skipped" if self.skipped else ""
        return f"read {which}{others}: {len(self.rows)} rows, {len(self.header)} columns{empty}"


def parse_sheet(value: str | int | None) -> str | int | None:
    """--sheet as given: a 0-based index ('0', 2) or a sheet's name."""
    if value is None or isinstance(value, int):
        return value
    return int(value) if value.strip().isdigit() else value


def read_sheet(path: Path, sheet: str | int | None) -> Sheet:
    """The chosen sheet (None: the first) of a workbook; read once per file version (its reader and the report's
    description both ask)."""
    require("excel", f"reading {path.name} (an Excel workbook)")
    stat = Path(path).stat()
    return _read_sheet(str(path), stat.st_mtime_ns, stat.st_size, parse_sheet(sheet))


@functools.lru_cache(maxsize=4)
def _read_sheet(name: str, _mtime_ns: int, _size: int, sheet: str | int | None) -> Sheet:
    import zipfile

    import openpyxl

    path = Path(name)
    try:
        # data_only: a formula's value as last computed, not its text; read_only streams a large sheet
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        raise BertlensError(f"{path}: not a readable Excel workbook ({exc}); save it again as .xlsx") from None
    try:
        names = tuple(book.sheetnames)
        chosen = _sheet_name(path, names, sheet)
        cells = [tuple(row) for row in book[chosen].iter_rows(values_only=True)]
    finally:
        book.close()
    numbered = [(number, row) for number, row in enumerate(cells, start=1) if any(not _empty(c) for c in row)]
    if not numbered:
        raise BertlensError(f"{path}: sheet {chosen!r} is empty; choose the sheet with the data with --sheet")
    width = max(_last_filled(row) for _, row in numbered) + 1
    rows = tuple((number, tuple(row[k] if k < len(row) else None for k in range(width))) for number, row in numbered)
    header = tuple(_header_name(cell, k) for k, cell in enumerate(rows[0][1]))
    skipped = rows[-1][0] - rows[0][0] + 1 - len(rows)  # empty rows between the first and the last
    return Sheet(chosen, names, header, rows[0], rows[1:], skipped)


def _sheet_name(path: Path, names: tuple[str, ...], sheet: str | int | None) -> str:
    if sheet is None:
        return names[0]
    if isinstance(sheet, int):
        if not 0 <= sheet < len(names):
            raise OptionError(
                f"{{sheet}} {sheet}: {literal(path.name)} has {len(names)} sheet(s) ({literal(', '.join(names))}); "
                "an index counts from 0",
                "sheet",
            )
        return names[sheet]
    if sheet not in names:
        raise OptionError(f"{{sheet}} {literal(repr(sheet))} is not in {literal(path.name)}: "
                          f"{literal(did_you_mean(sheet, names))}", "sheet")  # fmt: skip
    return sheet


def _empty(cell: Cell) -> bool:
    return cell is None or (isinstance(cell, str) and not cell.strip())


def _last_filled(row: tuple[Cell, ...]) -> int:
    return max((k for k, cell in enumerate(row) if not _empty(cell)), default=-1)


def _header_name(cell: Cell, k: int) -> str:
    """A header cell as a column name; an empty one (or the cells a merged header covers) as pandas names it."""
    return f"Unnamed: {k}" if _empty(cell) else cell_text(cell).strip()


def cell_text(cell: Cell) -> str:
    """A cell as the text a CSV export would hold with a decimal point: whole numbers without '.0', other numbers
    as Python writes them (shortest round trip), booleans as true/false, dates as ISO 8601, empty as ''."""
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return "true" if cell else "false"
    if isinstance(cell, float):
        return str(int(cell)) if math.isfinite(cell) and cell.is_integer() and abs(cell) < 1e15 else repr(cell)
    if isinstance(cell, datetime.datetime | datetime.date | datetime.time):
        return cell.isoformat()
    return str(cell)


def is_date(cell: Cell) -> bool:
    return isinstance(cell, datetime.datetime | datetime.date | datetime.time)
