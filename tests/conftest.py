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


def make_tiny_bert(path: Path, tokenizer_dir: Path, layers: int = 2, width: int = 32, seed: int = 0) -> Path:
    """A randomly initialised BERT (2 layers, width 32, seed 0 unless told) with the given model's tokenizer."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=2 * width,
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
def second_tiny_bert_dir(tmp_path_factory, default_model_dir) -> Path:
    """Another random BERT (3 layers, width 48, seed 1), for sweeps across models: its own weights and depth."""
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert-3"), default_model_dir, layers=3, width=48, seed=1)


def _fetch_script():
    """scripts/fetch_base_model.py as a module (the script is standard library only; it is not part of the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fetch_base_model", REPO / "scripts" / "fetch_base_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def base_model_dir() -> Path:
    """all-mpnet-base-v2 (MPNet, 12 x 768), as `make base-model` fetches it ($BERTLENS_BASE_MODEL overrides the
    place); the tests that need it skip, with the command that fetches it, when it is absent or fails its sha256."""
    fetch = _fetch_script()
    path = Path(os.environ.get("BERTLENS_BASE_MODEL") or fetch.default_dir())
    if not fetch.verified(path):
        pytest.skip(f"base-size model not fetched ({path}): run `make base-model` to test at 12 x 768")
    return path


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


# Tiny random-initialised models of every family in the family table (3 layers, width 64, 4 heads), each saved
# as its *ForMaskedLM class (so it has a trained-shape masked-LM head) with tiny-raw-bert's WordPiece tokenizer.
FAMILY_CONFIGS = {
    "bert": {},
    "roberta": {"pad_token_id": 0, "max_position_embeddings": 514},
    "xlm-roberta": {"pad_token_id": 0, "max_position_embeddings": 514},
    "distilbert": {"dim": 64, "n_layers": 3, "n_heads": 4, "hidden_dim": 128},
    "albert": {"embedding_size": 32},
    "deberta-v2": {"relative_attention": True, "pos_att_type": ["p2c", "c2p"], "position_biased_input": False},
    "electra": {"embedding_size": 32},
    "mpnet": {"pad_token_id": 0, "max_position_embeddings": 514},
    "modernbert": {
        "global_attn_every_n_layers": 2,
        "local_attention": 16,
        "pad_token_id": 0,
        "cls_token_id": 101,
        "sep_token_id": 102,
        "bos_token_id": 101,
        "eos_token_id": 102,
    },
}


def make_tiny_family(model_type: str, path: Path, seed: int = 0) -> Path:
    from transformers import AutoConfig, AutoModelForMaskedLM

    common = {
        "vocab_size": 30522,
        "hidden_size": 64,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "max_position_embeddings": 512,
    }
    config = AutoConfig.for_model(model_type, **{**common, **FAMILY_CONFIGS[model_type]})
    torch.manual_seed(seed)
    AutoModelForMaskedLM.from_config(config).eval().save_pretrained(path, safe_serialization=True)
    raw = SHARED / "models" / "tiny-raw-bert"
    for name in TOKENIZER_FILES:
        if (raw / name).exists():
            shutil.copy(raw / name, path / name)
    return path


@pytest.fixture(scope="session")
def family_dir(tmp_path_factory):
    """family_dir(model_type) -> a tiny *ForMaskedLM model directory of that family (built once per session)."""
    built: dict[str, Path] = {}

    def get(model_type: str) -> Path:
        if model_type not in built:
            built[model_type] = make_tiny_family(model_type, tmp_path_factory.mktemp(f"tiny-{model_type}"))
        return built[model_type]

    return get


@pytest.fixture(scope="session")
def mini_data_dir(tmp_path_factory) -> Path:
    """The shared data cut to a few dozen rows per split (SST-2, movie reviews, UD EWT): commands end in seconds."""
    import json

    root = tmp_path_factory.mktemp("mini-data")
    (root / "sst2").mkdir()
    for split, count in (("train", 48), ("dev", 16), ("test", 16)):
        lines = (DATA / "sst2" / f"{split}.txt").read_text().splitlines()
        kept = [ln for ln in lines if ln.startswith("0")][: count // 2] + [ln for ln in lines if ln.startswith("1")][
            : count // 2
        ]
        (root / "sst2" / f"{split}.txt").write_text("\n".join(kept) + "\n")
    (root / "movie_reviews").mkdir()
    reviews = [json.loads(line) for line in (DATA / "movie_reviews" / "reviews.jsonl").read_text().splitlines()]
    kept = [r for r in reviews if r["label"] == reviews[0]["label"]][:12] + [
        r for r in reviews if r["label"] != reviews[0]["label"]
    ][:12]
    with open(root / "movie_reviews" / "reviews.jsonl", "w", encoding="utf-8") as handle:
        for review in kept:
            handle.write(json.dumps({**review, "text": review["text"][:900]}) + "\n")
    (root / "ud-ewt").mkdir()
    for split, count in (("train", 80), ("dev", 40), ("test", 40)):
        sentences = (DATA / "ud-ewt" / f"{split}.conllu").read_text(encoding="utf-8").split("\n\n")[:count]
        (root / "ud-ewt" / f"{split}.conllu").write_text("\n\n".join(sentences) + "\n\n", encoding="utf-8")
    return root


@pytest.fixture
def model_reads(monkeypatch) -> list[str]:
    """The class names of every `from_pretrained` read of model weights during the test, in order."""
    from transformers import modeling_utils

    reads: list[str] = []
    original = modeling_utils.PreTrainedModel.from_pretrained.__func__

    def counted(cls, *args, **kwargs):
        reads.append(cls.__name__)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(modeling_utils.PreTrainedModel, "from_pretrained", classmethod(counted))
    return reads


@pytest.fixture(scope="session")
def _ray_nodes():
    """A Ray cluster of two nodes on this machine (a head and a worker node, one CPU each), for the session."""
    cluster_utils = pytest.importorskip("ray.cluster_utils")
    cluster = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    yield cluster
    cluster.shutdown()


@pytest.fixture
def ray_cluster(_ray_nodes) -> str:
    """The two-node cluster's address; the driver is not connected (the code under test joins by address) and is
    disconnected after the test."""
    import ray

    ray.shutdown()
    yield _ray_nodes.address
    ray.shutdown()
