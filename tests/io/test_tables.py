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
        ("a.txt", b"fine\nbad \xff byte\n", (), True, "line 2: invalid UTF-8"),
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
