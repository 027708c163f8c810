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
        ("a.xlsx", "x", (), True, "unsupported extension"),
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
