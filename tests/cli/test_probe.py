"""`bertlens probe --suite linguistic` end to end on small slices, bad input, and resuming."""

from __future__ import annotations

import json

import pytest

from bertlens.cli.main import main
from tests.conftest import DATA, edit_cached_result
from tests.reports.chromium import CHROMIUM, assert_report_renders


def run_probe(tmp_path, model, *extra):
    """A quick probe run; `extra` flags are added (a flag given twice is refused, so --max-sentences in `extra`
    replaces the quick default)."""
    quick = [] if "--max-sentences" in extra else ["--max-sentences", "150"]
    return main(
        [
            "probe",
            "--suite",
            "linguistic",
            "--model",
            str(model),
            "--treebank",
            str(DATA / "ud-ewt"),
            *quick,
            "--resamples",
            "50",
            "--out",
            str(tmp_path / "out"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--quiet",
            *extra,
        ]
    )


def test_suite_writes_report_plots_json_and_datasets(tmp_path, tiny_bert_dir):
    assert run_probe(tmp_path, tiny_bert_dir, "--tasks", "upos,deprel,tense,bigram_shift") == 0
    out = tmp_path / "out"
    data = json.loads((out / "results.json").read_text())
    assert [row["task"] for row in data["summary"]] == ["upos", "deprel", "tense", "bigram_shift"]
    upos = data["tasks"]["upos"]["result"]
    assert len(upos["accuracy"]) == 3 and len(upos["selectivity"]) == 3  # 2-layer model: layers 0..2
    assert sum(upos["mix_weights"]) == pytest.approx(1.0)
    for key in ("layer0", "best_layer", "best", "best_low", "best_high", "centre_of_gravity"):
        assert key in data["summary"][0]
    assert "selectivity_at_best" in data["summary"][0] and "selectivity_at_best" not in data["summary"][2]
    report = (out / "report.md").read_text()
    assert "centre of gravity" in report and "selectivity" in report
    assert (out / "heatmap.png").stat().st_size > 0 and (out / "curves.png").stat().st_size > 0
    if CHROMIUM:
        assert_report_renders(out / "report.html", "bertlens probe", ("task", "level"), tmp_path, "probe")
    lines = (out / "datasets" / "tense.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["label"] in ("Past", "Pres")


def test_rerun_resumes_from_finished_tasks(tmp_path, tiny_bert_dir):
    assert run_probe(tmp_path, tiny_bert_dir, "--tasks", "upos,tense") == 0
    saved = tmp_path / "out" / "tasks" / "upos.json"
    edit_cached_result(saved, lambda outcome: outcome["result"]["accuracy"].__setitem__(0, 0.123))  # a valid marker
    assert run_probe(tmp_path, tiny_bert_dir, "--tasks", "upos,tense") == 0
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    assert result["tasks"]["upos"]["result"]["accuracy"][0] == 0.123
    assert run_probe(tmp_path, tiny_bert_dir, "--tasks", "upos", "--seed", "1") == 0  # other settings: recomputed
    assert json.loads(saved.read_text())["result"]["result"]["accuracy"][0] != 0.123


def test_a_tampered_task_checkpoint_is_recomputed_not_trusted(tmp_path, tiny_bert_dir):
    assert run_probe(tmp_path, tiny_bert_dir, "--tasks", "tense") == 0
    saved = tmp_path / "out" / "tasks" / "tense.json"
    data = json.loads(saved.read_text())
    truth = data["result"]["result"]["accuracy"][0]
    data["result"]["result"]["accuracy"][0] = 0.123  # changed without its checksum
    saved.write_text(json.dumps(data))
    with pytest.warns(UserWarning, match="tense.json failed its checksum; recomputing it"):
        assert run_probe(tmp_path, tiny_bert_dir, "--tasks", "tense") == 0
    assert (
        json.loads((tmp_path / "out" / "results.json").read_text())["tasks"]["tense"]["result"]["accuracy"][0] == truth
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tasks", "upso"], "unknown probing task 'upso': did you mean 'upos'?"),
        (["--max-sentences", "0"], "--max-sentences must be at least 1"),
        (["--pooler", "maxx"], "unknown pooler"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path, tiny_bert_dir, capsys, args, message):
    assert run_probe(tmp_path, tiny_bert_dir, *args) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_malformed_treebank_names_file_and_line(tmp_path, tiny_bert_dir, capsys):
    bank = tmp_path / "tb"
    bank.mkdir()
    good = "# text = ok\n1\tok\tok\tINTJ\tUH\t_\t0\troot\t_\t_\n\n"
    for split in ("train", "dev"):
        (bank / f"{split}.conllu").write_text(good)
    (bank / "test.conllu").write_text(good + "1 ok ok INTJ\n")
    code = main(
        [
            "probe",
            "--suite",
            "linguistic",
            "--model",
            str(tiny_bert_dir),
            "--treebank",
            str(bank),
            "--out",
            str(tmp_path / "o"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "test.conllu:4: expected 10 tab-separated columns" in err
