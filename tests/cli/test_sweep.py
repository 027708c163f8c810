"""`bertlens sweep` from the command line: user files, outputs, recipe round trip, bad input."""

import json
import re

import numpy as np
import pytest

from bertlens.cli.main import main
from tests.reports.chromium import CHROMIUM, assert_report_renders

POSITIVE = [
    "a wonderful film",
    "great acting and a moving story",
    "i loved every minute",
    "brilliant and funny",
    "a joy to watch",
    "superb direction",
]
NEGATIVE = [
    "a dull mess",
    "boring and far too long",
    "i hated it",
    "weak script, bad acting",
    "a waste of time",
    "painfully slow",
]


def run(capsys, *argv):
    code = main(["sweep", *map(str, argv), "--quiet"])
    return code, capsys.readouterr().err


@pytest.fixture
def labelled(tmp_path):
    rows = [(t, "pos") for t in POSITIVE] * 2 + [(t, "neg") for t in NEGATIVE] * 2
    csv_path = tmp_path / "reviews.csv"
    csv_path.write_text("id,review,sentiment\n" + "".join(f'{i},"{t}",{label}\n' for i, (t, label) in enumerate(rows)))
    tsv_path = tmp_path / "reviews.tsv"
    tsv_path.write_text("".join(f"{label}\t{t}\n" for t, label in rows))
    return csv_path, tsv_path


def test_csv_with_header_and_tsv_without_give_the_same_sweep(tmp_path, labelled, tiny_bert_dir, capsys):
    csv_path, tsv_path = labelled
    common = ["--model", tiny_bert_dir, "--folds", "3", "--resamples", "100", "--cache-dir", tmp_path / "cache"]
    code, err = run(
        capsys, "--data", csv_path, "--text-col", "review", "--label-col", "sentiment", "--out", tmp_path / "a", *common
    )
    assert code == 0, err
    code, err = run(
        capsys,
        "--data",
        tsv_path,
        "--no-header",
        "--text-col",
        "1",
        "--label-col",
        "0",
        "--out",
        tmp_path / "b",
        *common,
    )
    assert code == 0, err
    a, b = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("a", "b"))
    assert [r["value"] for r in a["rows"]] == [r["value"] for r in b["rows"]]
    for name in ("results.json", "recipe.json", "report.md", "heatmap-probe.png"):
        assert (tmp_path / "a" / name).stat().st_size > 0
    assert "heatmap-probe.png" in (tmp_path / "a" / "report.md").read_text()
    if CHROMIUM:
        assert_report_renders(
            tmp_path / "a" / "report.html", "bertlens sweep", ("rank", "candidate"), tmp_path, "sweep"
        )


def test_recommended_recipe_reproduces_the_sweep_vectors(tmp_path, labelled, tiny_bert_dir, capsys):
    csv_path, _ = labelled
    code, err = run(
        capsys,
        "--data",
        csv_path,
        "--text-col",
        "review",
        "--label-col",
        "sentiment",
        "--model",
        tiny_bert_dir,
        "--folds",
        "3",
        "--resamples",
        "50",
        "--cache-dir",
        tmp_path / "cache",
        "--out",
        tmp_path / "s",
    )
    assert code == 0, err
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(POSITIVE + NEGATIVE) + "\n")
    assert (
        main(
            [
                "embed",
                str(texts),
                "--recipe",
                str(tmp_path / "s" / "recipe.json"),
                "--out",
                str(tmp_path / "v.npy"),
                "--quiet",
            ]
        )
        == 0
    )
    recipe = json.loads((tmp_path / "s" / "recipe.json").read_text())
    from bertlens.embedding.embedder import Embedder
    from bertlens.representation.recipe import Recipe

    expected = Embedder(Recipe.from_dict(recipe)).encode(POSITIVE + NEGATIVE)
    assert np.abs(np.load(tmp_path / "v.npy") - expected).max() <= 1e-6


@pytest.mark.parametrize(
    "content, extra, message",
    [
        ("text,label\na,1\nb,\nc,0\n", [], r"blank label on line 3"),
        ("text,label\n" + "a,1\n" * 12, [], "only one class"),
        ("text,label\n" + "a,1\n" * 12 + "b,0\n" * 2, ["--folds", "10"], "fewer than the 10 folds"),
        ("a,b,score\nx,y,high\n", ["--text-col2", "b"], "score 'high' is not a number"),
        ("a,score\nx,1\n", ["--text-col2", "b"], "no column 'b'"),
    ],
)
def test_bad_user_data_is_one_line_and_exit_1(tmp_path, tiny_bert_dir, capsys, content, extra, message):
    path = tmp_path / "d.csv"
    path.write_text(content)
    text_col = "a" if "--text-col2" in extra else "text"
    label = "score" if "--text-col2" in extra else "label"
    code, err = run(
        capsys,
        "--data",
        path,
        "--text-col",
        text_col,
        "--label-col",
        label,
        "--model",
        tiny_bert_dir,
        "--out",
        tmp_path / "o",
        *extra,
    )
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and re.search(message, lines[0]), err
    assert not (tmp_path / "o").exists()


def test_unknown_task_suggests(tmp_path, capsys):
    code, err = run(capsys, "--task", "sts-b", "--out", tmp_path / "o")
    assert code == 1 and "did you mean 'stsb'" in err


def test_hugging_face_task_without_the_datasets_package_is_a_clear_error(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "datasets", None)  # as on a machine without `pip install datasets`
    code, err = run(
        capsys, "--task", "hf:glue:sst2", "--text-col", "sentence", "--label-col", "label", "--out", tmp_path / "o"
    )
    assert code == 1 and "pip install 'bertlens[datasets]'" in err


def test_the_users_own_split_replaces_cross_validation(tmp_path, tiny_bert_dir, capsys):
    rows = [(t, "pos") for t in POSITIVE] * 3 + [(t, "neg") for t in NEGATIVE] * 3
    splits = (["train"] * 4 + ["validation", "test"]) * 6
    table = tmp_path / "own.csv"
    table.write_text("text,label,part\n" + "".join(f'"{t}",{y},{s}\n' for (t, y), s in zip(rows, splits)))
    common = ["--text-col", "text", "--label-col", "label", "--model", tiny_bert_dir, "--poolers", "mean"]
    code, err = run(capsys, "--data", table, "--split-col", "part", *common, "--out", tmp_path / "a")
    assert code == 0, err
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert {r["split"] for r in results["rows"]} == {"test"} and results["rows"][0]["n"] == 6
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    train.write_text("text,label\n" + "".join(f'"{t}",{y}\n' for (t, y), s in zip(rows, splits) if s != "test"))
    test.write_text("text,label\n" + "".join(f'"{t}",{y}\n' for (t, y), s in zip(rows, splits) if s == "test"))
    code, err = run(capsys, "--data", train, "--test", test, *common, "--out", tmp_path / "b")
    assert code == 0, err
    assert json.loads((tmp_path / "b" / "results.json").read_text())["rows"][0]["n"] == 6


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--split-col", "part"], "other than train, dev (or validation) and test on line 3"),
        (["--dev", "x.csv"], "--dev needs --test"),
        (["--split-col", "part", "--test", "x.csv"], "either as --split-col or as --test/--dev"),
    ],
)
def test_bad_splits_are_one_line(tmp_path, tiny_bert_dir, capsys, extra, message):
    table = tmp_path / "own.csv"
    table.write_text('text,label,part\n"good",pos,train\n"bad",neg,holdout\n"fine",pos,test\n')
    code, err = run(
        capsys, "--data", table, "--text-col", "text", "--label-col", "label", *extra, "--model", tiny_bert_dir
    )
    assert code == 1 and message in err and len(err.strip().splitlines()) == 1


def test_clustering_is_scored_next_to_the_probe_when_asked(tmp_path, labelled, tiny_bert_dir, capsys):
    csv_path, _ = labelled
    common = ["--text-col", "review", "--label-col", "sentiment", "--model", tiny_bert_dir, "--poolers", "mean"]
    code, err = run(capsys, "--data", csv_path, *common, "--folds", "3", "--protocols", "probe,clustering",
                    "--out", tmp_path / "c")  # fmt: skip
    assert code == 0, err
    results = json.loads((tmp_path / "c" / "results.json").read_text())
    rows = [r for r in results["rows"] if r["protocol"] == "clustering"]
    assert rows and {r["metric"] for r in rows} == {"v_measure"} and rows[0]["split"] == "all subsamples"
    assert all(0 <= r["value"] <= 1 for r in rows if r["value"] is not None)
    assert not any(r["candidate"] == "mean/scalar_mix" for r in rows)


def test_a_sample_bertlens_draws_is_never_refused_for_its_folds(tmp_path, tiny_bert_dir, capsys):
    """The issue's case: 100 classes, every one >= 20 texts, --max-examples 2000 --folds 5 (a plain random draw
    leaves a class under 5). The sweep runs, and says how it drew."""
    from tests.tasks.test_loaders import _many_classes

    path = _many_classes(tmp_path / "topics.csv", 100, lambda c: 20 + (c * 37) % 200)
    argv = ["sweep", "--data", str(path), "--text-col", "text", "--label-col", "label", "--max-examples", "2000"]
    argv += ["--folds", "5", "--model", str(tiny_bert_dir), "--poolers", "mean", "--layers", "2", "--resamples", "50"]
    code = main([*argv, "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "drawn by class, so every class keeps at least 5 texts" in err
    assert any("drawn by class" in n for n in json.loads((tmp_path / "o" / "results.json").read_text())["notes"])
