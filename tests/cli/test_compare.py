"""`bertlens finetune` and `bertlens compare` end to end on a tiny model and small SST-2 slices."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bertlens.cli.main import main
from tests.conftest import DATA, edit_cached_result
from tests.reports.chromium import CHROMIUM, assert_report_renders

FAST = ["--epochs", "1", "--min-steps", "2", "--batch-size", "16", "--max-dev", "40", "--quiet"]


def hf_mean_pooled(model_dir, texts: list[str]) -> np.ndarray:
    """The reference: Hugging Face's own model and tokenizer, last layer, mean over real tokens."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(model_dir), AutoModel.from_pretrained(model_dir).eval()
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state  # [B, T, H]
    mask = batch["attention_mask"].unsqueeze(-1).float()  # [B, T, 1]
    return ((hidden * mask).sum(1) / mask.sum(1)).numpy()


def test_finetune_saves_a_model_every_command_accepts(tmp_path, tiny_bert_dir):
    out = tmp_path / "tuned"
    args = [
        "finetune",
        "--task",
        "sst2",
        "--data-dir",
        str(DATA),
        "--model",
        str(tiny_bert_dir),
        "--size",
        "48",
        "--strategy",
        "partial:1",
        "--out",
        str(out),
        *FAST,
    ]
    assert main(args) == 0
    assert (out / "model.safetensors").is_file() and (out / "head" / "head.json").is_file()
    assert not (out / "checkpoint").exists()
    record = json.loads((out / "training.json").read_text())
    assert record["strategy"] == "partial:1" and record["train_examples"] == 48 and 0 <= record["test"] <= 1
    assert json.loads((out / "recipe.json").read_text())["model"] == str(out.resolve())
    sentences = ["a fine film", "a dull film that never ends"]
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(sentences) + "\n")
    assert (
        main(
            [
                "embed",
                str(texts),
                "--precision",
                "fp32",
                "--model",
                str(out),
                "--out",
                str(tmp_path / "v.npy"),
                "--quiet",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "embed",
                str(texts),
                "--precision",
                "fp32",
                "--recipe",
                str(out / "recipe.json"),
                "--out",
                str(tmp_path / "w.npy"),
                "--quiet",
            ]
        )
        == 0
    )
    by_model, by_recipe = np.load(tmp_path / "v.npy"), np.load(tmp_path / "w.npy")
    np.testing.assert_allclose(
        by_model, hf_mean_pooled(out, sentences), atol=1e-5
    )  # the saved weights, as HF loads them
    np.testing.assert_array_equal(by_recipe, by_model)
    assert np.abs(by_model - hf_mean_pooled(tiny_bert_dir, sentences)).max() > 1e-3  # fine-tuning changed the encoder
    sweep = [
        "sweep",
        "--task",
        "sst2",
        "--data-dir",
        str(DATA),
        "--model",
        str(out),
        "--max-examples",
        "60",
        "--poolers",
        "mean",
        "--resamples",
        "50",
        "--bank-dtype",
        "float32",
        "--out",
        str(tmp_path / "sweep"),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--quiet",
    ]
    assert main(sweep) == 0
    from bertlens.encoding.encoder import Encoder
    from bertlens.features.bank import build_bank
    from bertlens.models import fingerprint

    swept = json.loads((tmp_path / "sweep" / "results.json").read_text())
    assert swept["model_fingerprint"] == fingerprint(out)  # the tuned model was swept, not its base
    bank = build_bank(Encoder(str(out)), sentences, tmp_path / "bank", poolers=("mean",), dtype="float32")
    np.testing.assert_allclose(bank.layer("mean", 2), by_model, atol=1e-5)  # the sweep's features are the same vectors


def test_compare_writes_curves_payoff_and_drift(tmp_path, tiny_bert_dir):
    out = tmp_path / "cmp"
    args = [
        "compare",
        "--task",
        "sst2",
        "--data-dir",
        str(DATA),
        "--model",
        str(tiny_bert_dir),
        "--sizes",
        "24,48",
        "--strategies",
        "frozen,full",
        "--frozen-sizes",
        "100",
        "--seeds",
        "2",
        "--drift-texts",
        "30",
        "--out",
        str(out),
        *FAST,
    ]
    assert main(args) == 0
    data = json.loads((out / "results.json").read_text())
    assert {(r["strategy"], r["size"], r["seed"]) for r in data["runs"]} == {
        (s, n, seed) for s in ("frozen", "full") for n in (24, 48) for seed in (0, 1)
    } | {("frozen", 100, 0), ("frozen", 100, 1)}
    full = [r for r in data["runs"] if r["strategy"] == "full"]
    assert all(len(r["cka"]) == 3 and r["drift_before"] is not None for r in full)
    assert data["drift_task"] == "trec" and "payoff" in data and len(data["curve"]) == 5
    assert (out / "learning_curves.png").stat().st_size > 0 and (out / "cka.png").is_file()
    assert "n=24" in (out / "report.md").read_text()
    if CHROMIUM:
        assert_report_renders(out / "report.html", "bertlens compare", ("strategy", "n"), tmp_path, "compare")
    marker = out / "runs" / "full-n24-s0.json"
    edit_cached_result(marker, lambda run: run.update(test=0.987))  # a marker with a valid checksum
    assert not (out / "runs" / "full-n24-s0").exists()  # checkpoints of finished runs are removed
    assert main(args) == 0  # finished runs are reused
    again = json.loads((out / "results.json").read_text())
    assert any(r["test"] == 0.987 for r in again["runs"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--strategies", "frozen,ful"], "unknown strategy 'ful'"),
        (["--strategies", "partial:2"], "the model has 2 layers, so partial:K needs K < 2"),
        (["--sizes", "100000"], "more than the task's 6920 training examples"),
        (["--sizes", "ten"], "'ten' is not a number"),
        (["--seeds", "0"], "--seeds must be at least 1"),
    ],
)
def test_bad_compare_input_is_one_line(tmp_path, tiny_bert_dir, capsys, extra, message):
    code = main(
        [
            "compare",
            "--task",
            "sst2",
            "--data-dir",
            str(DATA),
            "--model",
            str(tiny_bert_dir),
            *([] if "--strategies" in extra else ["--strategies", "frozen,full"]),  # a flag given twice is refused
            "--out",
            str(tmp_path / "o"),
            "--quiet",
            *extra,
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 1 and message in err and len(err.splitlines()) == 1
