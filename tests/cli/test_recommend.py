"""`bertlens recommend` through the CLI: every command its report prints runs as printed."""

from __future__ import annotations

import json
import shlex

import numpy as np

from bertlens.cli.main import main, parse_command_line


def _labelled_csv(path, rows: int = 120):
    words = ["good", "bad", "film", "plot", "great", "dull", "actor", "music"]
    rng = np.random.default_rng(0)
    lines = ["review,label"]
    for i in range(rows):
        label = i % 2
        text = " ".join(rng.choice(words, 8)) + (" wonderful" if label else " terrible")
        lines.append(f"{text} {i},{label}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_printed_command_parses_and_the_embed_ones_run_as_printed(tmp_path, tiny_bert_dir, capsys, monkeypatch):
    data = _labelled_csv(tmp_path / "reviews.csv")
    out = tmp_path / "rec"
    argv = [
        "recommend",
        "--data",
        str(data),
        "--text-col",
        "review",
        "--label-col",
        "label",
        "--model",
        str(tiny_bert_dir),
    ]
    assert main([*argv, "--budget-minutes", "1", "--no-int8", "--out", str(out), "--quiet"]) == 0, capsys.readouterr()
    commands = [c for d in json.loads((out / "results.json").read_text())["decisions"] for c in d["commands"]]
    assert commands, "recommend printed no command"
    monkeypatch.chdir(tmp_path)
    for command in commands:
        words = shlex.split(command)
        assert words[0] == "bertlens" and not {"OUT", "DATA", "...", "FILE"} & set(words), command
        if "TEXTS" in words:  # only a catalog task leaves the user's own texts to name
            raise AssertionError(f"a table's texts were known, yet: {command}")
        args = parse_command_line(words[1:])  # every flag exists, nothing required is missing
        assert args.command == words[1]
        if words[1] == "embed":
            assert main(words[1:] + ["--quiet"]) == 0, (command, capsys.readouterr().err)
            assert np.load(args.out).shape[0] == 120


def test_a_recommend_run_reads_the_models_weights_at_most_twice(tmp_path, tiny_bert_dir, capsys, model_reads):
    """Every step's encoders and every fine-tuning run start from a copy in memory (models.weights_read_once): the
    weights are read from disk once per attention implementation (SDPA for fp32, eager for bf16), not once a step."""
    data = _labelled_csv(tmp_path / "reviews.csv")
    argv = ["recommend", "--data", str(data), "--text-col", "review", "--label-col", "label"]
    argv += ["--model", str(tiny_bert_dir), "--budget-minutes", "1", "--out", str(tmp_path / "rec"), "--quiet"]
    assert main(argv) == 0, capsys.readouterr().err
    decisions = json.loads((tmp_path / "rec" / "results.json").read_text())["decisions"]
    tuned = next(d for d in decisions if d["step"] == "frozen or fine-tuned")
    assert "measured" in tuned["confidence"], tuned  # the fine-tuning runs ran, each from weights in memory
    assert 1 <= len(model_reads) <= 2, model_reads  # 7 before (default model, 3-minute budget, docs/results-log.md)
