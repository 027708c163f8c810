"""How a delimited file is written, read from the file instead of assumed: its delimiter and quote character, its
encoding where a byte-order mark says so, and the encoding to suggest when it is not UTF-8.

Files come out of Excel and other tools as ';'-separated (where ',' is the decimal mark), tab- or '|'-separated,
with a byte-order mark and CRLF line ends, or in a legacy 8-bit encoding. The delimiter and quoting are detected on
a sample with CleverCSV (van den Burg, Nazabal & Sutton 2019, "Wrangling messy CSV files by detecting row and type
patterns": it scores each candidate dialect by how consistent the rows and cell types it gives are). An encoding
is only read on its own from a byte-order mark (UTF-8, UTF-16, UTF-32: certain); anything else that is not UTF-8 is
refused with a suggestion (charset-normalizer; an 8-bit guess is never certain, and a wrong one changes letters
silently).
"""

from __future__ import annotations

import codecs
import functools
from dataclasses import dataclass
from pathlib import Path

DELIMITERS = (",", ";", "\t", "|")  # what a delimited file may be separated by, as --delimiter accepts them
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
SAMPLE_BYTES = 1 << 16  # what the dialect is detected on: the first 64 KiB, cut at a line end
BOMS = (  # longest first: UTF-32 LE's mark begins with UTF-16 LE's
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
WIDE = ("utf-16", "utf-32")  # encodings whose line ends are more than one byte: read in text mode


def parse_delimiter(value: str | None) -> str | None:
    """--delimiter as given: one of DELIMITERS, or its name (comma, semicolon, tab, pipe; '\\t' for tab); None
    detects it."""
    if value is None:
        return None
    named = {name: char for char, name in DELIMITER_NAMES.items()} | {"\\t": "\t"}
    chosen = named.get(value.strip().lower(), value)
    if chosen not in DELIMITERS:
        from bertlens.errors import OptionError, literal

        raise OptionError(
            f"{{delimiter}} {literal(repr(value))} is not one of comma, semicolon, tab or pipe (or , ; | and \\t)",
            "delimiter",
        )
    return chosen


@dataclass(frozen=True)
class Dialect:
    """What a delimited file was read as, and whether each part was detected (True) or given/implied (False)."""

    delimiter: str
    quotechar: str
    encoding: str
    bom: bool
    crlf: bool
    detected: bool

    def describe(self, path: Path) -> str:
        """One line for the report: what was read, and how to change it."""
        how = "detected" if self.detected else "given"
        extras = ", ".join(
            x for x in ("byte-order mark" if self.bom else "", "CRLF line ends" if self.crlf else "") if x
        )
        return (
            f"read {path.name} as {DELIMITER_NAMES.get(self.delimiter, repr(self.delimiter))}-separated ({how}), "
            f"{self.encoding.upper()}" + (f", {extras}" if extras else "")
        )


def bom_encoding(head: bytes) -> str | None:
    """The encoding a byte-order mark at the start of `head` names, or None."""
    return next((name for mark, name in BOMS if head.startswith(mark)), None)


def file_encoding(path: Path, given: str) -> tuple[str, bool]:
    """(the encoding to read with, whether the file starts with a byte-order mark): a UTF-16/32 mark overrides the
    UTF-8 default (a mark is certain); an encoding the caller gave is kept."""
    with open(path, "rb") as handle:
        marked = bom_encoding(handle.read(4))
    if marked in WIDE and codecs.lookup(given).name == "utf-8":
        return marked, True
    return given, marked is not None


def sample_text(path: Path, encoding: str) -> str:
    """The first SAMPLE_BYTES of the file decoded, cut after its last complete line (a whole file when shorter)."""
    with open(path, encoding=encoding, errors="replace", newline="") as handle:
        text = handle.read(SAMPLE_BYTES)
        if handle.read(1):
            end = max(text.rfind("\n"), 0)
            text = text[: end + 1] or text
    return text.removeprefix("\ufeff")


def read_dialect(path: Path, encoding: str, delimiter: str | None, tab_separated: bool) -> Dialect:
    """The dialect of a delimited file: `delimiter` when given, tab for a .tsv, else detected among DELIMITERS.
    Detected once per file version (its reader and the report's description both ask; a changed file anew)."""
    stat = Path(path).stat()
    return _read_dialect(str(path), stat.st_mtime_ns, stat.st_size, encoding, delimiter, tab_separated)


@functools.lru_cache(maxsize=64)
def _read_dialect(name: str, _mtime_ns: int, _size: int, encoding: str, delimiter: str | None, tab_separated: bool):
    """read_dialect() of one version of file `name` (its modification time and size are part of the key)."""
    path = Path(name)
    encoding, bom = file_encoding(path, encoding)
    sample = sample_text(path, encoding)
    crlf = "\r\n" in sample
    if delimiter is not None or tab_separated:
        return Dialect(delimiter or "\t", '"', encoding, bom, crlf, False)
    import clevercsv

    found = clevercsv.Detector().detect(sample, delimiters=list(DELIMITERS)) if sample.strip() else None
    chosen = found.delimiter if found is not None and found.delimiter in DELIMITERS else ","
    quote = found.quotechar if found is not None and found.quotechar in ('"', "'") else '"'
    return Dialect(chosen, quote, encoding, bom, crlf, True)


def suggest_encoding(path: Path) -> str:
    """The encoding to suggest for a file that is not UTF-8. Western European text is the common case and its two
    encodings are told apart by bytes alone: latin-1 when no byte is in 0x80-0x9f (there cp1252 decodes the same),
    cp1252 when such bytes decode as Windows punctuation; otherwise charset-normalizer's best guess."""
    with open(path, "rb") as handle:
        head = handle.read(1 << 20)
    try:
        head.decode("cp1252")
        return "cp1252" if any(0x80 <= b < 0xA0 for b in head) else "latin-1"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(head).best()
    return best.encoding.replace("_", "-") if best is not None else "latin-1"
