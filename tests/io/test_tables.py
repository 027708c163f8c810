import pytest

from bertlens.errors import BertlensError
from bertlens.io.tables import TableSpec, iter_records, parse_column, read_texts


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def test_txt_one_text_per_line(tmp_path):
    assert read_texts(write(tmp_path, "a.txt", "one\r\ntwo\n\nfour")) == ["one", "two", "", "four"]


def test_csv_with_header_quotes_and_line_numbers(tmp_path):
    path = write(tmp_path, "a.csv", 'id,text\n1,"hello, world"\n2,"multi\nline"\n3,last\n')
    records = list(iter_records(TableSpec(path, ("text", "id"))))
    assert records == [(2, ("hello, world", "1")), (3, ("multi\nline", "2")), (5, ("last", "3"))]


def test_tsv_without_header_by_index(tmp_path):
    path = write(tmp_path, "a.tsv", 'a\t"quoted" text\nb\tsecond\n')
    assert read_texts(path, column=1, header=False) == ['"quoted" text', "second"]


def test_jsonl_field(tmp_path):
    path = write(tmp_path, "a.jsonl", '{"text": "x", "label": 1}\n\n{"text": "y", "label": 0}\n')
    assert list(iter_records(TableSpec(path, ("text", "label")))) == [(1, ("x", "1")), (3, ("y", "0"))]


@pytest.mark.parametrize(
    "name, content, columns, header, message",
    [
        ("a.txt", b"fine\nbad \xff byte\n", (), True, "line 2: not UTF-8.*encoding='latin-1'"),
        ("a.csv", "id,text\n1,x\n", ("txt",), True, "no column 'txt'.*did you mean 'text'"),
        ("a.csv", "id,text\n1,x\n2\n", ("text",), True, "line 3: column 'text' is missing"),
        ("a.tsv", "a\tb\n", ("text",), False, "no header row"),
        ("a.jsonl", '{"text": "x"}\n{"txt": "y"}\n', ("text",), True, "line 2: no field 'text'"),
        ("a.jsonl", '{"text": "x"}\nnot json\n', ("text",), True, "line 2: invalid JSON"),
        ("a.csv", "id,text\n", (), True, "--column"),
        ("a.xls", "x", (), True, "unsupported extension '.xls' \\(an old Excel workbook: save it as .xlsx\\)"),
        ("a.xlsx", "x", ("text",), True, "not a readable Excel workbook"),
        ("a.txt", "", (), True, "is empty"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path, name, content, columns, header, message):
    path = write(tmp_path, name, content)
    with pytest.raises(BertlensError, match=message):
        list(iter_records(TableSpec(path, columns, header)))


def test_missing_file(tmp_path):
    with pytest.raises(BertlensError, match="does not exist"):
        read_texts(tmp_path / "nope.txt")


def test_parse_column():
    assert parse_column("2") == 2 and parse_column("text") == "text"


def _parquet(tmp_path, columns: dict, rows_per_group: int | None = None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "a.parquet"
    pq.write_table(pa.table(columns), path, row_group_size=rows_per_group)
    return path


def test_parquet_by_name_and_index_streams_across_batches_and_row_groups(tmp_path, monkeypatch):
    import bertlens.io.tables as tables

    monkeypatch.setattr(tables, "PARQUET_BATCH_ROWS", 3)  # several read batches, and row groups of 4
    texts = [f"text {i}" for i in range(10)]
    path = _parquet(tmp_path, {"id": list(range(10)), "text": texts, "label": [i % 2 for i in range(10)]}, 4)
    assert list(iter_records(TableSpec(path, ("text", "label")))) == [
        (i + 1, (t, str(i % 2))) for i, t in enumerate(texts)
    ]
    assert read_texts(path, column=1) == texts


def test_parquet_null_text_reads_as_empty_for_the_empty_policy(tmp_path):
    path = _parquet(tmp_path, {"text": ["a", None, "c"]})
    assert read_texts(path, column="text") == ["a", "", "c"]


@pytest.mark.parametrize(
    "columns, message",
    [
        ((), "--column"),
        (("txt",), "no column 'txt'.*did you mean 'text'"),
        ((5,), "no column 5; it has 2"),
        (("id",), "column 'id' holds int64, not text"),
    ],
)
def test_parquet_bad_columns_are_named(tmp_path, columns, message):
    path = _parquet(tmp_path, {"id": [1, 2], "text": ["a", "b"]})
    with pytest.raises(BertlensError, match=message):
        list(iter_records(TableSpec(path, columns)))


def test_a_file_that_is_not_parquet_says_so(tmp_path):
    path = write(tmp_path, "a.parquet", "id,text\n1,x\n")
    with pytest.raises(BertlensError, match="not a readable Parquet file"):
        list(iter_records(TableSpec(path, ("text",))))


# --- multi-line cells (RFC 4180) -----------------------------------------------------------------------------------
PROSE = [
    ("Great film.\n\nI liked it, really.", "pos"),  # an inner line with the delimiter: looks like a row, is not one
    ("Dull.\nToo long, too slow.\nSkip it.", "neg"),
    ("Plain one-liner", "pos"),
]


def test_quoted_multiline_cells_from_pythons_csv_equal_their_jsonl_twin(tmp_path):
    import csv
    import json

    path = tmp_path / "reviews.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([("text", "label"), *PROSE])
    twin = tmp_path / "reviews.jsonl"
    twin.write_text("".join(json.dumps({"text": t, "label": label}) + "\n" for t, label in PROSE))
    spec = TableSpec(path, ("text", "label"))
    assert [v for _, v in iter_records(spec)] == [v for _, v in iter_records(TableSpec(twin, ("text", "label")))]
    from bertlens.io.tables import describe_reading

    assert "2 quoted cells hold line breaks" in describe_reading(spec)


@pytest.mark.parametrize(
    "content, line",
    [
        ('text,label\n"good movie,1\nbad movie,0\nok film,1\n', 2),  # never closed: the record has the wrong width
        ('text,label\nfine,1\n"good movie,1\nbad movie,0\n"ok" film,1\nlast,0\n', 3),  # closed later: swallows rows
        ('text,label\n"good movie,1\nbad movie,0\n"ok" film,1\nlast,0\nmore,1\n', 2),  # judged once the file is read
    ],
)
def test_an_unbalanced_quote_is_still_refused_naming_the_line(tmp_path, content, line):
    path = write(tmp_path, "a.csv", content)
    with pytest.raises(
        BertlensError, match=f"line {line}: a quoted field runs to line .*unbalanced quote.*--multiline"
    ):
        list(iter_records(TableSpec(path, ("text", "label"))))


def test_multiline_forces_the_rfc_4180_reading(tmp_path):
    path = write(tmp_path, "a.csv", 'text,label\nfine,1\n"good movie,1\nbad movie,0\n"ok" film,1\nlast,0\n')
    records = list(iter_records(TableSpec(path, ("text", "label"), multiline=True)))
    assert records[1] == (3, ('good movie,1\nbad movie,0\nok" film', "1"))


# --- nested fields -------------------------------------------------------------------------------------------------
def test_dotted_paths_reach_into_json_objects_and_a_literal_dotted_key_wins(tmp_path):
    nested = write(
        tmp_path, "n.jsonl", '{"review": {"body": "x", "stars": 4}}\n{"review": {"body": "y", "stars": 2}}\n'
    )
    flat = write(tmp_path, "f.jsonl", '{"body": "x", "stars": 4}\n{"body": "y", "stars": 2}\n')
    records = list(iter_records(TableSpec(nested, ("review.body", "review.stars"))))
    assert records == list(iter_records(TableSpec(flat, ("body", "stars")))) == [(1, ("x", "4")), (2, ("y", "2"))]
    both = write(tmp_path, "b.jsonl", '{"review": {"body": "nested"}, "review.body": "literal"}\n')
    assert next(iter_records(TableSpec(both, ("review.body",))))[1] == ("literal",)
    with pytest.raises(BertlensError, match="no field 'review.bdy': did you mean 'review.body'"):
        list(iter_records(TableSpec(nested, ("review.bdy",))))


def test_dotted_paths_reach_into_parquet_structs(tmp_path):
    path = _parquet(tmp_path, {"review": [{"body": "x", "meta": {"stars": 4}}, {"body": "y", "meta": {"stars": 2}}]})
    assert [v for _, v in iter_records(TableSpec(path, ("review.body", "review.meta.stars")))] == [
        ("x", "4"),
        ("y", "2"),
    ]
    with pytest.raises(BertlensError, match="no column 'review.bdy': did you mean 'review.body'"):
        list(iter_records(TableSpec(path, ("review.bdy",))))
    with pytest.raises(BertlensError, match="'review.meta' holds struct"):
        list(iter_records(TableSpec(path, ("review.meta",))))


# --- Excel workbooks -----------------------------------------------------------------------------------------------
def test_a_sheet_reads_typed_cells_as_its_csv_export_would(tmp_path):
    import datetime

    openpyxl = pytest.importorskip("openpyxl")
    from bertlens.io.tables import describe_reading

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Scores"
    sheet.append(["Text", None, "Score", "Flag"])  # an empty header cell: named as pandas names it
    sheet.append(["a b", "x", 0.347, True])
    sheet.append([None, None, None, None])  # an empty row inside: skipped and counted
    sheet.append(["c d", "y", 2.0, False])
    sheet.append([None, None, None, None])  # a formatted, empty tail: dropped
    book.create_sheet("Notes").append(["Text", "Score"])
    book["Notes"].append(["e f", datetime.date(2024, 3, 4)])
    path = tmp_path / "s.xlsx"
    book.save(path)
    spec = TableSpec(path, ("Text", "Score", "Flag", "Unnamed: 1"))
    assert list(iter_records(spec)) == [(2, ("a b", "0.347", "true", "x")), (4, ("c d", "2", "false", "y"))]
    assert describe_reading(spec) == (
        "read sheet 'Scores' of s.xlsx (sheet 1 of 2: 'Scores', 'Notes'; --sheet chooses): 2 rows, 4 columns, "
        "1 empty rows skipped"
    )
    with pytest.raises(BertlensError, match=r"sheet 'Notes'\) row 2: column 'Score' holds a date \(2024-03-04"):
        list(iter_records(TableSpec(path, ("Text", "Score"), sheet=1)))
    assert list(iter_records(TableSpec(path, ("Text",), sheet="Notes"))) == [(2, ("e f",))]
    with pytest.raises(BertlensError, match="sheet 'Note' is not in s.xlsx: did you mean 'Notes'"):
        list(iter_records(TableSpec(path, ("Text",), sheet="Note")))
    with pytest.raises(BertlensError, match="sheet 2: s.xlsx has 2 sheet"):
        list(iter_records(TableSpec(path, ("Text",), sheet=2)))


def test_sheet_is_refused_for_a_file_that_is_no_workbook(tmp_path):
    with pytest.raises(BertlensError, match="sheet applies to Excel workbooks"):
        list(iter_records(TableSpec(write(tmp_path, "a.csv", "text\nx\n"), ("text",), sheet="Sheet1")))


def test_a_workbook_without_openpyxl_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    import sys

    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.append(["text"])
    book.save(tmp_path / "t.xlsx")
    monkeypatch.setitem(sys.modules, "openpyxl", None)
    with pytest.raises(
        BertlensError, match=r"needs the 'excel' extra \(openpyxl not installed\): pip install 'bertlens\[excel\]'"
    ):
        list(iter_records(TableSpec(tmp_path / "t.xlsx", ("text",))))
