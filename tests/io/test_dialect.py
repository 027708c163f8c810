"""Delimited files as other tools write them (io/dialect.py): the same rows whatever the delimiter, byte-order mark,
line ends or wide encoding; an 8-bit file refused with the encoding it reads as; a forced delimiter kept."""

import csv
import io

import pytest

from bertlens.errors import BertlensError, OptionError
from bertlens.io.dialect import parse_delimiter, read_dialect, suggest_encoding
from bertlens.io.tables import TableSpec, describe_reading, iter_records

ROWS = [("text", "label")] + [
    (f'café n°{i}, quite {"good" if i % 2 else "bad"}; "so" | {i}', "pos" if i % 2 else "neg") for i in range(30)
]


def written(tmp_path, delimiter=",", bom=False, crlf=False, encoding="utf-8", name="f.csv"):
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n" if crlf else "\n").writerows(ROWS)
    data = buffer.getvalue().encode(encoding)
    path = tmp_path / name
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    return path


def values(path, **spec):
    return [v for _, v in iter_records(TableSpec(path, ("text", "label"), **spec))]


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize("crlf", [False, True])
def test_every_dialect_gives_the_same_rows(tmp_path, delimiter, bom, crlf):
    path = written(tmp_path, delimiter, bom, crlf)
    assert values(path) == ROWS[1:]
    dialect = read_dialect(path, "utf-8", None, False)
    assert (dialect.delimiter, dialect.bom, dialect.crlf, dialect.detected) == (delimiter, bom, crlf, True)


@pytest.mark.parametrize("delimiter", [",", "\t"])
def test_utf16_with_its_mark_is_read_as_such_and_said(tmp_path, delimiter):
    path = written(tmp_path, delimiter, encoding="utf-16")
    assert values(path) == ROWS[1:]
    said = describe_reading(TableSpec(path, ("text",)))
    assert "UTF-16" in said and "byte-order mark" in said and "(detected)" in said


@pytest.mark.parametrize(("encoding", "named"), [("latin-1", "latin-1"), ("cp1252", "cp1252")])
def test_an_8bit_file_is_refused_naming_its_encoding_and_read_when_given(tmp_path, encoding, named):
    rows = ROWS + ([("it\u2019s \u201cquoted\u201d", "pos")] if encoding == "cp1252" else [])
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=";", lineterminator="\n").writerows(rows)
    path = tmp_path / "f.csv"
    path.write_bytes(buffer.getvalue().encode(encoding))
    assert suggest_encoding(path) == named
    with pytest.raises(OptionError) as error:
        values(path)
    assert f"--encoding {named}" in error.value.as_flags() and "line 2" in str(error.value)
    assert values(path, encoding=named) == rows[1:]


def test_a_forced_delimiter_is_kept_and_named_ones_are_read():
    assert [parse_delimiter(v) for v in ("comma", "semicolon", "tab", "pipe", "\\t", ";", None)] == [
        ",", ";", "\t", "|", "\t", ";", None,
    ]  # fmt: skip
    with pytest.raises(OptionError, match="delimiter 'colon' is not one of"):
        parse_delimiter("colon")


def test_a_forced_delimiter_overrides_detection(tmp_path):
    path = written(tmp_path, ";")
    assert values(path, delimiter=";") == ROWS[1:]
    with pytest.raises(BertlensError, match="no column 'text'"):  # the header read whole under ','
        values(path, delimiter=",")
    assert "semicolon-separated (given)" in describe_reading(TableSpec(path, ("text",), delimiter=";"))


def test_a_tsv_stays_tab_separated_with_quotes_kept(tmp_path):
    path = tmp_path / "f.tsv"
    path.write_text('text\tlabel\n"quoted, really"\t1\nplain; text\t0\n')
    assert values(path) == [('"quoted, really"', "1"), ("plain; text", "0")]
