"""`bertlens domain`: tokenizer fit against a hand count, surprise with intervals, a verdict that follows them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bertlens.cli.main import main
from bertlens.encoding.encoder import Encoder
from bertlens.experiments.domain import compare_surprise, tokenizer_fit
from tests.conftest import DATA, SHARED
from tests.reports.chromium import CHROMIUM, assert_report_renders

RAW = SHARED / "models" / "tiny-raw-bert"


def test_fertility_matches_a_hand_count(tiny_bert_dir):
    tokenizer = Encoder(str(tiny_bert_dir)).tokenizer
    texts = ["the cat sat", "unaffordable cats sat", "the cat"]
    words = [w for t in texts for w in t.split()]  # no punctuation: the tokenizer's words are the spaces' words
    pieces = [len(tokenizer.tokenize(w)) for w in words]
    fit = tokenizer_fit(tokenizer, texts, min_count=1)
    assert fit.words == len(words) == 8 and fit.pieces == sum(pieces)
    assert fit.fertility == pytest.approx(sum(pieces) / 8)
    assert fit.split_share == pytest.approx(sum(p > 1 for p in pieces) / 8)
    assert fit.unk_rate == 0.0
    assert [w for w, _, _ in fit.fragmented] == [w for w, p in zip(words, pieces, strict=True) if p >= 3]


def test_gap_interval_separates_clearly_different_losses():
    rng = np.random.default_rng(0)
    user, ref, gap = compare_surprise(rng.normal(7.0, 0.5, 200), rng.normal(6.0, 0.5, 200), seed=0)
    assert user.low < user.mean < user.high and ref.low < ref.mean < ref.high
    assert 0.8 < gap[0] < 1.2 and gap[1] > 0.5


def run_domain(tmp_path, texts: list[str], model) -> dict:
    user = tmp_path / "user.txt"
    user.write_text("\n".join(texts) + "\n")
    reference = tmp_path / "ref.txt"
    with open(DATA / "sst2" / "train.txt", encoding="utf-8") as handle:
        reference.write_text("".join(line.split(" ", 1)[1] for line, _ in zip(handle, range(120), strict=False)))
    out = tmp_path / "out"
    assert (
        main(
            [
                "domain",
                "--texts",
                str(user),
                "--reference",
                str(reference),
                "--model",
                str(model),
                "--samples",
                "40",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    assert (out / "report.md").is_file()
    if CHROMIUM:
        assert_report_renders(out / "report.html", "bertlens domain", ("measure",), tmp_path, "domain")
    return json.loads((out / "results.json").read_text())


def test_off_domain_text_is_flagged_with_the_pretrain_command(tmp_path):
    rng = np.random.default_rng(1)
    letters = np.array(list("qxzjkvwy"))
    gibberish = [" ".join("".join(rng.choice(letters, 9)) for _ in range(12)) for _ in range(60)]
    data = run_domain(tmp_path, gibberish, RAW)
    assert data["adapt"] and data["user_loss"]["mean"] > data["ref_loss"]["mean"]
    assert data["user"]["fertility"] > 1.25 * data["ref"]["fertility"]
    assert "bertlens pretrain --from" in data["verdict"]


def test_a_model_without_a_trained_head_reports_the_tokenizer_only(tmp_path, tiny_bert_dir):
    with open(DATA / "sst2" / "dev.txt", encoding="utf-8") as handle:
        texts = [line.split(" ", 1)[1].strip() for line, _ in zip(handle, range(40), strict=False)]
    data = run_domain(tmp_path, texts, tiny_bert_dir)
    assert data["user_loss"] is None and "no trained masked-LM head" in data["notes"][0]
    assert not data["adapt"]  # the same kind of English as the reference
