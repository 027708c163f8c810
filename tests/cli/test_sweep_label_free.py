"""`bertlens sweep --texts` (no labels) and `--protocols ...,label_free` from the command line."""

import json

import numpy as np
import pytest

from bertlens.cli.main import main
from tests.cli.test_sweep import NEGATIVE, POSITIVE
from tests.tasks.test_retrieval import DOCS, QRELS, QUERIES, write_beir

TEXTS = POSITIVE + NEGATIVE + [f"{a} and {b}" for a, b in zip(POSITIVE, NEGATIVE)]


def run(capsys, *argv):
    code = main(["sweep", *map(str, argv), "--quiet"])
    return code, capsys.readouterr().err


def test_texts_alone_give_a_report_and_a_recipe_embed_reproduces(tmp_path, tiny_bert_dir, capsys):
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS + ["", TEXTS[0]]) + "\n")  # a blank line and a repeat: ignored
    code, err = run(
        capsys, "--texts", texts, "--model", tiny_bert_dir, "--cache-dir", tmp_path / "c", "--out", tmp_path / "s"
    )
    assert code == 0, err
    results = json.loads((tmp_path / "s" / "results.json").read_text())
    assert results["kind"] == "texts" and set(results["protocols"]) == {"label_free"}
    assert results["recommended"] in results["label_free"]["components"]
    assert set(results["label_free"]["components"][results["recommended"]]) >= {"effective_rank", "alignment_words"}
    assert "recommended" in err and "no labels" in err and "1 blank and 1 repeated lines skipped" in err
    assert (tmp_path / "s" / "heatmap-label_free.png").is_file() and (tmp_path / "s" / "report.md").is_file()
    embed = ["embed", str(texts), "--recipe", str(tmp_path / "s" / "recipe.json"), "--out", str(tmp_path / "v.npy")]
    assert main([*embed, "--empty", "skip", "--quiet"]) == 0
    assert np.load(tmp_path / "v.npy").shape[0] == len(TEXTS) + 1  # embed keeps every non-blank line


def test_texts_with_label_flags_or_too_few_texts_are_one_line(tmp_path, tiny_bert_dir, capsys):
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    code, err = run(capsys, "--texts", texts, "--label-col", "x", "--model", tiny_bert_dir, "--out", tmp_path / "o")
    assert code == 1 and "--label-col belongs to --data" in err and len(err.strip().splitlines()) == 1
    code, err = run(capsys, "--texts", texts, "--text-col", "text", "--model", tiny_bert_dir, "--out", tmp_path / "o")
    assert code == 1 and "--texts reads its column from --column" in err
    few = tmp_path / "few.txt"
    few.write_text("a\nb\nc\n")
    code, err = run(capsys, "--texts", few, "--model", tiny_bert_dir, "--out", tmp_path / "o")
    assert code == 1 and "3 distinct texts" in err and not (tmp_path / "o").exists()
    code, err = run(capsys, "--texts", texts, "--task", "sst2", "--out", tmp_path / "o")  # one source only
    assert code == 1 and "give exactly one of --task, --data or --texts (got --task, --texts)" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.extended  # the same protocol as tests/experiments/test_sweep_label_free.py, through the CLI: `make test-extended`
def test_label_free_protocol_on_labelled_data_prints_and_writes_trust(tmp_path, tiny_bert_dir, capsys):
    rows = [(t, "pos") for t in POSITIVE] * 3 + [(t, "neg") for t in NEGATIVE] * 3
    data = tmp_path / "reviews.csv"
    data.write_text("review,sentiment\n" + "".join(f'"{t} {i}",{label}\n' for i, (t, label) in enumerate(rows)))
    code, err = run(
        capsys,
        "--data",
        data,
        "--text-col",
        "review",
        "--label-col",
        "sentiment",
        "--protocols",
        "probe,label_free",
        "--folds",
        "3",
        "--resamples",
        "50",
        "--model",
        tiny_bert_dir,
        "--cache-dir",
        tmp_path / "c",
        "--out",
        tmp_path / "s",
    )
    assert code == 0, err
    assert "label-free pick" in err and "vs the last-layer default" in err and "Spearman" in err
    trust = json.loads((tmp_path / "s" / "results.json").read_text())["label_free"]["trust"]
    assert trust["regrets"][1]["against"] == "last layer" and trust["settling"][0]["labels"] == 25
    assert "Can the label-free pick be trusted here?" in (tmp_path / "s" / "report.md").read_text()
    assert (tmp_path / "s" / "label-free-trust.png").stat().st_size > 10_000


@pytest.mark.extended  # the same protocol as tests/experiments/test_sweep_label_free.py, through the CLI: `make test-extended`
def test_retrieval_takes_the_label_free_protocol_and_rejects_a_probe(tmp_path, tiny_bert_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    code, err = run(
        capsys,
        "--data",
        root,
        "--protocols",
        "cosine,label_free",
        "--model",
        tiny_bert_dir,
        "--poolers",
        "mean",
        "--cache-dir",
        tmp_path / "cache",
        "--out",
        tmp_path / "o",
    )
    assert code == 0, err
    results = json.loads((tmp_path / "o" / "results.json").read_text())
    assert "label_free" in results["protocols"] and results["label_free"]["trust"]["regrets"][0]["against"] == "best"
    code, err = run(
        capsys, "--data", root, "--protocols", "cosine,probe", "--model", tiny_bert_dir, "--out", tmp_path / "p"
    )
    assert code == 1 and "protocol 'probe' does not apply to a retrieval task" in err


def test_recommend_reads_texts_alone_with_the_same_checks(tmp_path, capsys):
    few = tmp_path / "few.txt"
    few.write_text("a\nb\na\n\n")
    assert main(["recommend", "--texts", str(few), "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err.strip()
    assert "2 distinct texts; label-free scores need at least 8" in err and len(err.splitlines()) == 1
    assert main(["recommend", "--texts", str(few), "--split-col", "s", "--out", str(tmp_path / "r")]) == 1
    assert "--split-col belongs to --data" in capsys.readouterr().err and not (tmp_path / "r").exists()
