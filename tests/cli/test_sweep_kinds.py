"""Regression and multi-label through the command line: what was read is said, `--config` repeats a sweep,
`--engine ray` gives the local rows and pick, and `compare` puts the kind's frozen probe against its fine-tuned head
(issue #60)."""

import json

import pytest

from bertlens.cli.main import main
from tests.conftest import DATA


def emobank_slice(path):
    """EmoBank's first rows of each split: a number per text, with the split column."""
    lines = (DATA / "emobank" / "emobank.csv").read_text(encoding="utf-8").splitlines()
    take, kept = {"train": 120, "dev": 40, "test": 40}, [lines[0]]
    for line in lines[1:]:
        split = line.split(",")[1]
        if take.get(split, 0) > 0:
            kept.append(line)
            take[split] -= 1
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return ["--data", str(path), "--text-col", "text", "--label-col", "V", "--split-col", "split"]


def goemotions_slice(path):
    """GoEmotions' first 200 comments, labels as ids separated by commas (cross-validated, 3 folds)."""
    rows = (DATA / "goemotions" / "train.tsv").read_text(encoding="utf-8").splitlines()[:200]
    path.write_text("text\tlabels\tid\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return ["--data", str(path), "--text-col", "text", "--label-col", "labels", "--label-sep", ",", "--folds", "3"]


KINDS = {"regression": (emobank_slice, "e.csv", "spearman"), "multi_label": (goemotions_slice, "g.tsv", "micro_f1")}


def rows_of(out):
    return [(r["candidate"], r["metric"], r["value"]) for r in json.loads((out / "results.json").read_text())["rows"]]


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_kind_read_from_the_labels_sweeps_and_repeats_from_its_config(kind, tmp_path, tiny_bert_dir, capsys):
    make, name, metric = KINDS[kind]
    common = ["--model", str(tiny_bert_dir), "--resamples", "50", "--bank-dtype", "float32", "--quiet"]
    argv = ["sweep", *make(tmp_path / name), *common, "--cache-dir", str(tmp_path / "c")]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    said = capsys.readouterr().err
    first = json.loads((tmp_path / "a" / "results.json").read_text())
    assert first["kind"] == kind and {r["metric"] for r in first["rows"]} == {metric}
    assert ("read as a regression target" in said) if kind == "regression" else ("labels set aside" in said)
    again = ["sweep", "--config", str(tmp_path / "a" / "options.json"), "--out", str(tmp_path / "b")]
    assert main(again) == 0
    assert rows_of(tmp_path / "b") == rows_of(tmp_path / "a")


@pytest.mark.extended  # starts a Ray instance; an optional engine
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_kind_on_ray_gives_the_local_rows_and_pick(kind, tmp_path, tiny_bert_dir):
    ray = pytest.importorskip("ray")
    make, name, _ = KINDS[kind]
    argv = ["sweep", *make(tmp_path / name), "--model", str(tiny_bert_dir), "--resamples", "50", "--bank-dtype",
            "float32", "--poolers", "mean", "--quiet"]  # fmt: skip
    try:
        ray_run = [*argv, "--engine", "ray", "--ray-workers", "2", "--cache-dir", str(tmp_path / "rc")]
        assert main([*ray_run, "--out", str(tmp_path / "ray")]) == 0
    finally:
        ray.shutdown()
    assert main([*argv, "--cache-dir", str(tmp_path / "lc"), "--out", str(tmp_path / "local")]) == 0
    # the bank on Ray equals the local one to float32's last bit (tests/features/test_ray_bank.py); ridge and the
    # one-vs-rest logistic probes (each label solved to convergence) pass that on, so rows and picks are the same
    for (c1, m1, v1), (c2, m2, v2) in zip(rows_of(tmp_path / "ray"), rows_of(tmp_path / "local"), strict=True):
        assert (c1, m1) == (c2, m2) and v1 == pytest.approx(v2, abs=1e-4)
    picks = [json.loads((tmp_path / d / "recipe.json").read_text()) for d in ("ray", "local")]
    assert picks[0] == picks[1]


@pytest.mark.parametrize("kind", list(KINDS))
def test_compare_scores_the_kinds_frozen_probe_against_its_fine_tuned_head(kind, tmp_path, tiny_bert_dir):
    """The frozen side is the kind's own probe (ridge on Spearman; one-vs-rest logistic with per-label thresholds),
    the fine-tuned side a linear head with MSE or a sigmoid head with binary cross-entropy, both in the kind's metric."""
    make, name, metric = KINDS[kind]
    data = make(tmp_path / name)
    if kind == "multi_label":  # compare needs a test split: the next 100 comments
        rows = (DATA / "goemotions" / "train.tsv").read_text(encoding="utf-8").splitlines()[200:300]
        (tmp_path / "test.tsv").write_text("text\tlabels\tid\n" + "\n".join(rows) + "\n", encoding="utf-8")
        data = [*data[: data.index("--folds")], "--test", str(tmp_path / "test.tsv")]
    out = tmp_path / "cmp"
    args = ["compare", *data, "--model", str(tiny_bert_dir), "--sizes", "48", "--strategies", "frozen,full",
            "--seeds", "1", "--epochs", "1", "--min-steps", "2", "--batch-size", "16", "--quiet", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["metric"] == metric and {r["strategy"] for r in result["runs"]} == {"frozen", "full"}
    assert all(0 <= r["test"] <= 1 or kind == "regression" and -1 <= r["test"] <= 1 for r in result["runs"])


def test_one_01_column_per_label_gives_the_rows_of_a_separated_label_column(tmp_path, tiny_bert_dir):
    rows = (DATA / "goemotions" / "train.tsv").read_text(encoding="utf-8").splitlines()[:200]
    emotions = (DATA / "goemotions" / "labels.txt").read_text(encoding="utf-8").split()
    parsed = [(line.split("\t")[0], [emotions[int(i)] for i in line.split("\t")[1].split(",")]) for line in rows]
    names = sorted({label for _, labels in parsed for label in labels})  # columns by name, as SemEval ships them
    (tmp_path / "sep.tsv").write_text("text\tlabels\n" + "".join(f"{t}\t{','.join(ls)}\n" for t, ls in parsed))
    columns = "".join(t + "\t" + "\t".join(str(int(n in ls)) for n in names) + "\n" for t, ls in parsed)
    (tmp_path / "cols.tsv").write_text("text\t" + "\t".join(names) + "\n" + columns)
    common = ["--model", str(tiny_bert_dir), "--resamples", "50", "--folds", "3", "--quiet", "--text-col", "text"]
    assert main(["sweep", "--data", str(tmp_path / "sep.tsv"), "--label-col", "labels", "--label-sep", ",", *common,
                 "--out", str(tmp_path / "a"), "--cache-dir", str(tmp_path / "c")]) == 0  # fmt: skip
    assert main(["sweep", "--data", str(tmp_path / "cols.tsv"), "--label-cols", ",".join(names), *common,
                 "--out", str(tmp_path / "b"), "--cache-dir", str(tmp_path / "c")]) == 0  # fmt: skip
    assert rows_of(tmp_path / "a") == rows_of(tmp_path / "b")
