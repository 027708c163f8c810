"""Every encoder family x every command, on tiny random-initialised models of each family (tests/conftest.py).

Each family's hidden states and pooled vectors are checked against plain transformers (eager attention),
every command runs through the CLI, fine-tuning trains every encoder parameter, and `pretrain` starts
from the checkpoint's own masked-LM head. `SUPPORT` is what these tests prove; the guide's support table (docs/guide.md)
is rendered from it (test_guide_support_table_is_the_matrix).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from bertlens.cli.commands import COMMANDS as CLI_COMMANDS
from bertlens.embedding.embedder import Embedder
from bertlens.encoding.encoder import Encoder
from bertlens.representation.apply import Representation
from bertlens.representation.recipe import Recipe
from tests.conftest import FAMILY_CONFIGS, REPO
from tests.integration.commands import TEXTS, run_and_check

FAMILIES = tuple(FAMILY_CONFIGS)  # model types: bert, roberta, xlm-roberta, distilbert, albert, deberta-v2, ...
# every CLI command that runs a model (export in both formats): a new one joins the matrix, and needs its call in
# _command; `data` (the catalog's files) runs none
MODEL_FREE = ("data",)
COMMANDS = tuple(
    name
    for c in CLI_COMMANDS
    if c not in MODEL_FREE
    for name in (("export onnx", "export st") if c == "export" else (c,))
)
NAMES = {
    "bert": "BERT",
    "roberta": "RoBERTa",
    "xlm-roberta": "XLM-R",
    "distilbert": "DistilBERT",
    "albert": "ALBERT",
    "deberta-v2": "DeBERTa-v2",
    "electra": "ELECTRA",
    "mpnet": "MPNet",
    "modernbert": "ModernBERT",
}
SUPPORT = {(family, command): "ok" for family in FAMILIES for command in COMMANDS}


def _reference_states(model_dir: Path, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Plain transformers, eager attention: every hidden state [L+1, B, T, H] and the attention mask [B, T]."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    accepted = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask")}
    with torch.no_grad():
        out = model(**accepted, output_hidden_states=True)
    return torch.stack(out.hidden_states), batch["attention_mask"]


@pytest.mark.parametrize("family", FAMILIES)
def test_hidden_states_and_pooled_vectors_equal_transformers(family, family_dir):
    model_dir = family_dir(family)
    texts = TEXTS[:6]
    hidden, mask = _reference_states(model_dir, texts)  # [L+1, B, T, H], [B, T]
    encoder = Encoder(str(model_dir))
    tokenized = encoder.tokenize(texts)
    states = next(iter(encoder.iter_states(tokenized)))
    order = states.doc_index.numpy()
    length = states.hidden.shape[2]
    torch.testing.assert_close(states.hidden, hidden[:, order, :length], atol=1e-5, rtol=0)
    weights = mask[:, :, None].float()  # [B, T, 1]
    expected = (hidden[-1] * weights).sum(1) / weights.sum(1)  # [B, H]: mean of the last layer over real tokens
    got = Embedder(Recipe(model=str(model_dir)), encoder=encoder).encode(texts)
    np.testing.assert_allclose(got, expected.numpy(), atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_pooler_mixer_and_precision_embeds(family, family_dir):
    model_dir = str(family_dir(family))
    shapes = set()
    for pooler in ("cls", "mean", "max", "attention"):
        for mixer, layers in (("single", (-1,)), ("mean", (-2, -1)), ("concat", (-2, -1)), ("first_last", ())):
            recipe = Recipe(model=model_dir, pooler=pooler, mixer=mixer, layers=layers or (-1,))
            vectors = Embedder(recipe).encode(TEXTS[:4])
            assert np.isfinite(vectors).all()
            shapes.add(vectors.shape)
    mix = Recipe(model=model_dir, mixer="scalar_mix", layers=(0, 1, 2, 3), mix_weights=(0.1, 0.2, 0.3, 0.4))
    assert Embedder(mix).encode(TEXTS[:4]).shape == (4, 64)
    fp32 = Embedder(Recipe(model=model_dir)).encode(TEXTS[:4])
    bf16 = Embedder(Recipe(model=model_dir, precision="bf16")).encode(TEXTS[:4])
    cosine = (fp32 * bf16).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(bf16, axis=1)
    assert shapes == {(4, 64), (4, 128)} and cosine.min() > 0.99


@pytest.mark.extended  # training on every family; hidden states and every reading stay in the default suite
@pytest.mark.parametrize("family", FAMILIES)
def test_full_fine_tuning_trains_every_encoder_parameter(family, family_dir):
    from bertlens.tasks.loaders import Split
    from bertlens.training.blocks import block_of_parameters
    from bertlens.training.config import TrainConfig
    from bertlens.training.heads import Head, HeadSpec
    from bertlens.training.loop import fine_tune
    from bertlens.training.objectives import Encoded, Supervised
    from bertlens.training.strategies import parse_strategy

    encoder = Encoder(str(family_dir(family)))
    before = {n: p.detach().clone() for n, p in encoder.model.named_parameters()}
    split = Split(tuple(TEXTS), None, np.array([i % 2 for i in range(len(TEXTS))]))
    representation = Representation(Recipe(model=str(family_dir(family))), trainable=True)
    objective = Supervised(
        encoder,
        representation,
        Head(HeadSpec("classification", 64, 2)),
        Encoded.of(encoder, split),
        Encoded.of(encoder, split),
        "classification",
    )
    config = TrainConfig(lr=1e-3, epochs=1, min_steps=2, batch_size=6, patience=5)
    fine_tune(encoder, objective, parse_strategy("full", encoder.num_layers), config)
    trained = block_of_parameters(encoder.model)
    unchanged = [n for n, p in encoder.model.named_parameters() if n in trained and torch.equal(p, before[n])]
    assert not unchanged, f"{family}: these encoder parameters did not train: {unchanged[:5]}"
    if family == "electra":  # the embedding projection (embedding size 32 -> hidden 64) is part of block 0
        assert trained["embeddings_project.weight"] == 0


@pytest.mark.extended
@pytest.mark.parametrize("family", FAMILIES)
def test_pretrain_starts_from_the_checkpoints_own_masked_lm_head(family, family_dir):
    from transformers import AutoModelForMaskedLM

    from bertlens.training.masking import IGNORE, mask_tokens, replacement_ids
    from bertlens.training.mlm_head import mlm_head
    from bertlens.training.objectives import TokenBatch, masked_token_losses

    model_dir = family_dir(family)
    encoder = Encoder(str(model_dir))
    head, origin = mlm_head(encoder.model, model_dir)
    assert origin.loaded, origin.note
    batch = encoder.tokenizer(TEXTS[:4], padding=True, return_tensors="pt", return_special_tokens_mask=True)
    ids, real = batch["input_ids"], batch["attention_mask"].bool()
    maskable = real & ~batch["special_tokens_mask"].bool()
    words = torch.ones_like(real)
    random_ids = replacement_ids(encoder.tokenizer)
    with torch.no_grad():
        losses, _ = masked_token_losses(
            encoder,
            head,
            TokenBatch(ids, maskable, words, real),
            random_ids=random_ids,
            generator=torch.Generator().manual_seed(3),
        )
        masked = mask_tokens(
            ids,
            maskable,
            words,
            mask_id=encoder.tokenizer.mask_token_id,
            random_ids=random_ids,
            generator=torch.Generator().manual_seed(3),
        )
        reference = AutoModelForMaskedLM.from_pretrained(model_dir, attn_implementation="eager").eval()
        logits = reference(input_ids=masked.inputs, attention_mask=real.long()).logits  # [B, T, V]
        chosen = masked.labels != IGNORE
        expected = torch.nn.functional.cross_entropy(logits[chosen], masked.labels[chosen])
    torch.testing.assert_close(losses.mean(), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.extended
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("family", FAMILIES)
def test_every_command_runs_on_every_family(family, command, family_dir, mini_data_dir, tmp_path, capsys):
    model = str(family_dir(family))
    run_and_check(command, model, tmp_path, mini_data_dir, capsys)
    if command == "pretrain":
        record = json.loads((tmp_path / "pretrain" / "training.json").read_text())
        assert record["head"].startswith("the model's own masked-LM head"), record["head"]


def support_table() -> str:
    """The README's support table, rendered from SUPPORT."""
    lines = ["| family | " + " | ".join(COMMANDS) + " |", "|---|" + "---|" * len(COMMANDS)]
    for family in FAMILIES:
        lines.append(f"| {NAMES[family]} | " + " | ".join(SUPPORT[(family, c)] for c in COMMANDS) + " |")
    return "\n".join(lines)


def test_guide_support_table_is_the_matrix():
    readme = (REPO / "docs" / "guide.md").read_text()
    start, end = "<!-- support-table: tests/integration/test_family_matrix.py -->", "<!-- /support-table -->"
    assert start in readme and end in readme, "docs/guide.md lost its support table markers"
    table = readme.split(start, 1)[1].split(end, 1)[0].strip()
    assert table == support_table(), (
        "regenerate with: python -c 'from tests.integration.test_family_matrix import support_table; print(support_table())'"
    )
