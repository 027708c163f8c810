"""Spreadsheets as users keep them, through `sweep`, `recommend` and `bertlens.recommend` (issue #73): a score column
saved in a comma locale reads as the same numbers, a column that is not classes never reaches a recommendation, an
Excel workbook gives the rows of its CSV, a tags column is read as label sets, quoted multi-line cells and nested
JSON fields read as the flat file does."""

import csv
import io
import json
import sys

import pytest

import bertlens
from bertlens.cli.main import main
from bertlens.errors import OptionError
from tests.conftest import DATA


def emobank_rows(count=800):
    """(text, V) of EmoBank's first `count` rows that cp1252 can write: valence on 1-5 with one decimal."""
    with open(DATA / "emobank" / "emobank.csv", encoding="utf-8", newline="") as handle:
        rows = [(r["text"], r["V"]) for r in csv.DictReader(handle) if r["text"].strip()]
    return [row for row in rows if _encodes(row[0])][:count]


def _encodes(text: str) -> bool:
    try:
        text.encode("cp1252")
    except UnicodeEncodeError:
        return False
    return True


def write_csv(path, header, rows, delimiter=",", crlf=False, encoding="utf-8"):
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n" if crlf else "\n").writerows([header, *rows])
    path.write_bytes(buffer.getvalue().encode(encoding))
    return path


def european(path, rows):
    """What a spreadsheet in much of Europe saves: semicolons, cp1252, CRLF, a decimal comma."""
    return write_csv(path, ("Text", "Score"), [(t, v.replace(".", ",")) for t, v in rows], ";", True, "cp1252")


SWEEP = ("--resamples", "50", "--bank-dtype", "float32", "--poolers", "mean,cls", "--layers", "-1,-2", "--quiet")


def sweep(tmp_path, data, model, name, text="Text", label="Score", *extra):
    argv = ["sweep", "--data", str(data), "--text-col", text, "--label-col", label, "--model", str(model), *SWEEP,
            "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / name), *extra]  # fmt: skip
    assert main(argv) == 0
    return json.loads((tmp_path / name / "results.json").read_text())


def test_a_european_locale_score_file_is_regression_with_the_rows_of_its_decimal_point_twin(
    tmp_path, tiny_bert_dir, capsys
):
    rows = emobank_rows()
    (tmp_path / "eu").mkdir(), (tmp_path / "point").mkdir()
    comma = european(tmp_path / "eu" / "scores.csv", rows)
    point = write_csv(tmp_path / "point" / "scores.csv", ("Text", "Score"), rows, ";", True, "cp1252")
    read = sweep(tmp_path, comma, tiny_bert_dir, "eu-out", "Text", "Score", "--encoding", "cp1252")
    said = capsys.readouterr().err
    assert "decimal comma" in said and "read as a regression target" in said
    twin = sweep(tmp_path, point, tiny_bert_dir, "point-out", "Text", "Score", "--encoding", "cp1252")
    assert read["rows"] and {r["metric"] for r in read["rows"]} >= {"spearman"}
    assert read["rows"] == twin["rows"]
    report = (tmp_path / "eu-out" / "report.md").read_text()
    assert "decimal comma" in report and "semicolon-separated" in report and "CP1252" in report


def test_recommend_reads_the_european_file_as_regression_and_chooses_as_on_its_twin(tmp_path, tiny_bert_dir):
    rows = emobank_rows(300)
    (tmp_path / "eu").mkdir(), (tmp_path / "point").mkdir()
    files = {
        "eu": european(tmp_path / "eu" / "scores.csv", rows),
        "point": write_csv(tmp_path / "point" / "scores.csv", ("Text", "Score"), rows, ";", True, "cp1252"),
    }
    chosen = {}
    for name, data in files.items():
        argv = ["recommend", "--data", str(data), "--text-col", "Text", "--label-col", "Score", "--encoding",
                "cp1252", "--model", str(tiny_bert_dir), "--budget-minutes", "1", "--no-int8", "--quiet",
                "--out", str(tmp_path / f"rec-{name}")]  # fmt: skip
        assert main(argv) == 0
        result = json.loads((tmp_path / f"rec-{name}" / "results.json").read_text())
        step = next(d for d in result["decisions"] if d["step"] == "representation")
        chosen[name] = (step["decision"], step["evidence"].split("; sample of")[0])  # the figures, not the plan
        assert "spearman" in step["evidence"]
    assert chosen["eu"] == chosen["point"]


def ids_file(path):
    """600 sentences whose chosen label column is mostly one-off annotator ids (the issue's second case)."""
    rows = [(f"sentence number {i} about a film", f"A{(i * 7919) % 450}") for i in range(600)]
    return write_csv(path, ("text", "annotator"), rows)


def words_among_numbers(path):
    rows = [(f"sentence {i}", f"{1 + (i % 37) * 0.11:.2f}") for i in range(200)] + [("odd one", "unsure")]
    return write_csv(path, ("text", "score"), rows)


@pytest.mark.parametrize(
    "maker, label, words",
    [
        (ids_file, "annotator", "does not read as classes"),
        (words_among_numbers, "score", "reads as numbers on 200 of 201 rows"),
    ],
)
@pytest.mark.parametrize("command", ["sweep", "recommend"])
def test_a_column_that_is_not_classes_never_reaches_a_recommendation(
    tmp_path, tiny_bert_dir, capsys, maker, label, words, command
):
    data = maker(tmp_path / "data.csv")
    argv = [command, "--data", str(data), "--text-col", "text", "--label-col", label, "--model", str(tiny_bert_dir),
            "--out", str(tmp_path / "out"), "--quiet"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err and "--task-type" in err
    assert not (tmp_path / "out" / "recipe.json").exists()


def test_the_python_recommend_refuses_it_in_keyword_words(tmp_path, tiny_bert_dir):
    data = ids_file(tmp_path / "ids.csv")
    with pytest.raises(OptionError) as error:
        bertlens.recommend(data=data, text_col="text", label_col="annotator", model=str(tiny_bert_dir), quiet=True)
    message = str(error.value)
    assert "does not read as classes" in message and "task_type" in message and "--" not in message


def test_an_excel_workbook_gives_the_sweep_rows_of_its_csv(tmp_path, tiny_bert_dir, capsys):
    pandas = pytest.importorskip("pandas")
    pytest.importorskip("openpyxl")
    rows = emobank_rows()
    frame = pandas.DataFrame({"Text": [t for t, _ in rows], "Score": [float(v) for _, v in rows]})
    (tmp_path / "x").mkdir(), (tmp_path / "c").mkdir()
    frame.to_excel(tmp_path / "x" / "scores.xlsx", index=False, sheet_name="Ratings")
    frame.to_csv(tmp_path / "c" / "scores.csv", index=False)
    book = sweep(tmp_path, tmp_path / "x" / "scores.xlsx", tiny_bert_dir, "x-out")
    assert "read sheet 'Ratings' of scores.xlsx: 800 rows" in capsys.readouterr().err
    assert book["rows"] == sweep(tmp_path, tmp_path / "c" / "scores.csv", tiny_bert_dir, "c-out")["rows"]
    assert "sheet 'Ratings'" in (tmp_path / "x-out" / "report.md").read_text()


def test_a_workbook_without_openpyxl_is_one_line_and_exit_1(tmp_path, tiny_bert_dir, capsys, monkeypatch):
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.append(["text", "label"])
    book.save(tmp_path / "t.xlsx")
    monkeypatch.setitem(sys.modules, "openpyxl", None)
    argv = ["sweep", "--data", str(tmp_path / "t.xlsx"), "--text-col", "text", "--label-col", "label",
            "--model", str(tiny_bert_dir), "--out", str(tmp_path / "o"), "--quiet"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'bertlens[excel]'" in err


def tags_rows(count=400):
    """Comments with one to three of six emotions, joined by '|' as annotation tools export them (seeded)."""
    import random

    draw, emotions = random.Random(0), ["joy", "love", "pride", "anger", "fear", "sadness"]
    return [
        (f"comment {i} on the thread", "|".join(draw.sample(emotions, draw.choice([1, 1, 2, 3])))) for i in range(count)
    ]


def test_a_tags_column_runs_as_multi_label_with_a_note_and_comma_class_names_stay_classes(
    tmp_path, tiny_bert_dir, capsys
):
    data = write_csv(tmp_path / "tags.csv", ("text", "tags"), tags_rows())
    result = sweep(tmp_path, data, tiny_bert_dir, "tags-out", "text", "tags")
    said = capsys.readouterr().err
    assert "read as a multi-label task split on '|'" in said and "--label-sep '|'" in said
    assert {r["metric"] for r in result["rows"]} & {"micro_f1"}
    names = ["Arts, Culture", "Science, Tech", "Politics, Law"]
    commas = write_csv(tmp_path / "cats.csv", ("text", "cat"), [(f"story {i}", names[i % 3]) for i in range(90)])
    result = sweep(tmp_path, commas, tiny_bert_dir, "cats-out", "text", "cat")
    assert {r["metric"] for r in result["rows"]} & {"accuracy"} and "multi-label" not in capsys.readouterr().err


def test_a_weaker_tags_reading_is_refused_naming_label_sep(tmp_path, tiny_bert_dir, capsys):
    values = ["joy", "anger", "joy|love", "anger|fear", "love|pride", "fear|sadness"]  # 2 of 6 labels stand alone
    data = write_csv(tmp_path / "t.csv", ("text", "tags"), [(f"comment {i}", values[i % 6]) for i in range(120)])
    argv = ["sweep", "--data", str(data), "--text-col", "text", "--label-col", "tags", "--model", str(tiny_bert_dir),
            "--out", str(tmp_path / "o"), "--quiet"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "--label-sep '|' for a multi-label task" in err and "--task-type classification" in err
    assert main([*argv, "--label-sep", "|"]) == 0


def test_quoted_multiline_cells_and_nested_fields_give_the_rows_of_the_flat_file(tmp_path, tiny_bert_dir):
    rows = [(f"{t}\n\nSecond paragraph, {i}." if i % 4 == 0 else t, v) for i, (t, v) in enumerate(emobank_rows(200))]
    for name in ("csv", "flat", "nested"):
        (tmp_path / name).mkdir()
    write_csv(tmp_path / "csv" / "scores.csv", ("Text", "Score"), rows)  # Python's csv module quotes the line breaks
    with open(tmp_path / "flat" / "scores.jsonl", "w") as flat, open(tmp_path / "nested" / "scores.jsonl", "w") as nest:
        for text, score in rows:
            flat.write(json.dumps({"Text": text, "Score": float(score)}) + "\n")
            nest.write(json.dumps({"review": {"Text": text, "meta": {"Score": float(score)}}}) + "\n")
    reference = sweep(tmp_path, tmp_path / "flat" / "scores.jsonl", tiny_bert_dir, "flat-out")["rows"]
    assert sweep(tmp_path, tmp_path / "csv" / "scores.csv", tiny_bert_dir, "csv-out")["rows"] == reference
    nested = sweep(tmp_path, tmp_path / "nested" / "scores.jsonl", tiny_bert_dir, "n-out", "review.Text",
                   "review.meta.Score")  # fmt: skip
    assert nested["rows"] == reference


def test_python_reads_the_same_with_its_keywords(tmp_path, tiny_bert_dir):
    """sheet= and decimal= are the flags' keywords: a second sheet chosen by name, a decimal comma forced."""
    pytest.importorskip("openpyxl")
    pandas = pytest.importorskip("pandas")
    rows = emobank_rows(120)
    path = tmp_path / "book.xlsx"
    with pandas.ExcelWriter(path) as writer:
        pandas.DataFrame({"note": ["cover sheet"]}).to_excel(writer, sheet_name="About", index=False)
        pandas.DataFrame({"Text": [t for t, _ in rows], "Score": [v.replace(".", ",") for _, v in rows]}).to_excel(
            writer, sheet_name="Ratings", index=False
        )
    settings = dict(text_col="Text", label_col="Score", model=str(tiny_bert_dir), poolers="mean", layers="-1",
                    resamples=50, folds=3, quiet=True, cache_dir=tmp_path / "cache")  # fmt: skip
    run = bertlens.sweep(data=path, sheet="Ratings", decimal="comma", **settings)
    assert run.result.kind.name == "regression" and any("decimal" in note for note in run.notes)
    point = write_csv(tmp_path / "book.csv", ("Text", "Score"), rows)
    figures = [(r["candidate"], r["value"], r["ci_low"], r["ci_high"]) for r in run.rows()]
    assert figures == [(r["candidate"], r["value"], r["ci_low"], r["ci_high"]) for r in
                       bertlens.sweep(data=point, **settings).rows()]  # fmt: skip
    with pytest.raises(OptionError, match="sheet 'Ratngs' is not in book.xlsx: did you mean 'Ratings'"):
        bertlens.sweep(data=path, sheet="Ratngs", **settings)
