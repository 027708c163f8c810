"""Files as other tools write them, through the command line (issue #61): the same labelled data as comma,
semicolon, tab and pipe CSV, with a byte-order mark, CRLF or as UTF-16, gives the same sweep rows, and the report
says what was read; a small file's folds are fitted to it and said."""

import csv
import io
import json

import pytest

from bertlens.cli.main import main
from tests.conftest import DATA

SHAPES = {  # name: (delimiter, byte-order mark, CRLF, encoding)
    "comma": (",", False, False, "utf-8"),
    "semicolon, BOM, CRLF (Excel in much of Europe)": (";", True, True, "utf-8"),
    "tab": ("\t", False, False, "utf-8"),
    "pipe, CRLF": ("|", False, True, "utf-8"),
    "tab, UTF-16 (Excel's Unicode text)": ("\t", False, True, "utf-16"),
}


def trec_rows(count=120):
    """TREC questions (commas, quotes and apostrophes inside) with their six classes."""
    lines = (DATA / "trec" / "train.txt").read_text(encoding="latin-1").splitlines()[:count]
    return [("text", "label")] + [(text, label) for label, _, text in (line.partition(" ") for line in lines)]


def write(path, rows, delimiter, bom, crlf, encoding):
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n" if crlf else "\n").writerows(rows)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + buffer.getvalue().encode(encoding))
    return path


def sweep(tmp_path, data, tiny_bert_dir, name, *extra):
    argv = ["sweep", "--data", str(data), "--text-col", "text", "--label-col", "label", "--model", str(tiny_bert_dir),
            "--resamples", "50", "--bank-dtype", "float32", "--poolers", "mean", "--layers", "-1", "--quiet",
            "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / name), *extra]  # fmt: skip
    assert main(argv) == 0
    return json.loads((tmp_path / name / "results.json").read_text())


def test_every_dialect_gives_the_same_sweep_rows_and_says_what_was_read(tmp_path, tiny_bert_dir):
    rows = trec_rows()
    results = {}
    for number, (shape, dialect) in enumerate(SHAPES.items()):
        (tmp_path / str(number)).mkdir()
        data = write(tmp_path / str(number) / "questions.csv", rows, *dialect)  # one name: the task is named by it
        results[shape] = sweep(tmp_path, data, tiny_bert_dir, f"out{number}")
        report = (tmp_path / f"out{number}" / "report.md").read_text()
        assert "read questions.csv as" in report and "(detected)" in report
    reference = results["comma"]["rows"]
    for shape, result in results.items():
        assert result["rows"] == reference, shape


def test_a_semicolon_file_read_with_a_forced_comma_is_refused_in_one_line(tmp_path, tiny_bert_dir, capsys):
    data = write(tmp_path / "q.csv", trec_rows(40), ";", False, False, "utf-8")
    argv = ["sweep", "--data", str(data), "--text-col", "text", "--label-col", "label", "--delimiter", "comma",
            "--model", str(tiny_bert_dir), "--out", str(tmp_path / "o"), "--quiet"]  # fmt: skip
    assert main(argv) == 1
    assert "no column 'text' in the header" in capsys.readouterr().err


@pytest.mark.parametrize("folds", [None, "10"])
def test_a_small_file_gets_folds_it_can_fill_unless_the_user_chose_them(tmp_path, tiny_bert_dir, capsys, folds):
    rows = trec_rows(300)  # the first 300 TREC questions: six classes, the rarest ('2') with 6 rows, as in the issue
    data = write(tmp_path / "small.csv", rows, ",", False, False, "utf-8")
    extra = () if folds is None else ("--folds", folds)
    rarest = 6
    if folds is None:
        result = sweep(tmp_path, data, tiny_bert_dir, "o", *extra)
        said = capsys.readouterr().err
        assert f"{rarest}-fold cross-validation, not the default 10" in said
        assert f"({rarest}-fold cross-validation)" in (tmp_path / "o" / "report.md").read_text()
        assert result["rows"]
    else:
        argv = ["sweep", "--data", str(data), "--text-col", "text", "--label-col", "label", "--folds", folds,
                "--model", str(tiny_bert_dir), "--out", str(tmp_path / "o"), "--quiet"]  # fmt: skip
        assert main(argv) == 1
        assert "lower --folds or leave it out" in capsys.readouterr().err
