"""Shared fixtures: offline hub, the embedded default model, a tiny random BERT, shared data."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"  # MTEB builds its datasets locally here; never fetch
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import shutil
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
DATA = Path(os.environ.get("BERTLENS_DATA", SHARED / "data"))
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


@pytest.fixture(scope="session")
def default_model_dir() -> Path:
    from bertlens.models import default_model_dir as locate

    return locate()


def make_tiny_bert(path: Path, tokenizer_dir: Path) -> Path:
    """A randomly initialised 2-layer BERT (width 32, seed 0) with the given model's tokenizer, at `path`."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).eval().save_pretrained(path, safe_serialization=True)
    for name in TOKENIZER_FILES:
        if (tokenizer_dir / name).exists():
            shutil.copy(tokenizer_dir / name, path / name)
    return path


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory, default_model_dir) -> Path:
    """A randomly initialised 2-layer BERT (width 32) with the default model's tokenizer."""
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), default_model_dir)


@pytest.fixture(scope="session")
def sts_sentences() -> list[str]:
    import csv

    with open(DATA / "stsb" / "test.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    return [row[0] for row in rows[:200]] + [row[1] for row in rows[:200]]


@pytest.fixture(scope="session")
def ud_slice():
    """The first 400 sentences of each UD EWT split."""
    from bertlens.tasks.conllu import load_treebank

    return load_treebank(DATA / "ud-ewt", max_sentences=400)


def edit_cached_result(path: Path, edit) -> None:
    """Change a cached result's payload in place *and* re-sign it, as a legitimate writer would."""
    import json

    from bertlens.io.cache import payload_sha256

    saved = json.loads(path.read_text())
    edit(saved["result"])
    saved["sha256"] = payload_sha256(saved["result"])
    path.write_text(json.dumps(saved))
