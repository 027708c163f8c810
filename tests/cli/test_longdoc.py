"""`bertlens longdoc` on a slice of the movie reviews with a tiny model."""

from __future__ import annotations

import json

from bertlens.cli.main import main
from tests.conftest import DATA


def test_longdoc_scores_every_strategy_with_speed(tmp_path, tiny_bert_dir):
    out = tmp_path / "ld"
    assert (
        main(
            [
                "longdoc",
                "--task",
                "movie_reviews",
                "--data-dir",
                str(DATA),
                "--model",
                str(tiny_bert_dir),
                "--max-length",
                "64",
                "--max-examples",
                "60",
                "--folds",
                "3",
                "--resamples",
                "100",
                "--strategies",
                "head,tail,head_tail:16,windows:mean,windows:max,hier:attention",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    data = json.loads((out / "results.json").read_text())
    rows = {r["strategy"]: r for r in data["rows"]}
    assert set(rows) == {"head", "tail", "head_tail:16", "windows:mean", "windows:max", "hier:attention"}
    assert rows["head"]["speed_vs_head"] == 1.0 and rows["windows:max"]["encoding_pass"] == "windows"
    assert all(0 <= r["ci_low"] <= r["accuracy"] <= r["ci_high"] <= 1 for r in rows.values())
    assert data["windows_per_document"] > 5  # reviews are far longer than 62 tokens


def test_bad_strategy_is_one_line(tmp_path, tiny_bert_dir, capsys):
    code = main(
        [
            "longdoc",
            "--task",
            "movie_reviews",
            "--data-dir",
            str(DATA),
            "--model",
            str(tiny_bert_dir),
            "--strategies",
            "head,hier:lstm",
            "--out",
            str(tmp_path / "x"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 1 and "unknown chunk classifier 'hier:lstm'" in err and len(err.splitlines()) == 1


def test_sweep_accepts_a_long_text_strategy_and_records_it(tmp_path, tiny_bert_dir):
    out = tmp_path / "sw"
    assert (
        main(
            [
                "sweep",
                "--task",
                "movie_reviews",
                "--data-dir",
                str(DATA),
                "--model",
                str(tiny_bert_dir),
                "--max-length",
                "64",
                "--max-examples",
                "60",
                "--folds",
                "3",
                "--poolers",
                "mean,max",
                "--long-text",
                "windows:max",
                "--resamples",
                "50",
                "--out",
                str(out),
                "--cache-dir",
                str(tmp_path / "cache"),
                "--quiet",
            ]
        )
        == 0
    )
    assert json.loads((out / "recipe.json").read_text())["long_text"] == "windows:max"
