"""Per encoder family, on a tiny random-initialised model (tests/conftest.py: make_tiny_family): the largest
difference between bertlens and plain transformers (eager) in hidden states and mean-pooled vectors, the
attention implementation bertlens loaded, and the ONNX export's opset and parity on the same texts.

    .venv/bin/python bench/family_parity.py
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertlens.embedding.embedder import Embedder
from bertlens.encoding.encoder import Encoder
from bertlens.experiments.export import run_export_onnx
from bertlens.representation.recipe import Recipe
from tests.conftest import FAMILY_CONFIGS, make_tiny_family

TEXTS = [f"{a} {b} number {i}, and a few more words" for i, (a, b) in enumerate(zip("abcdefgh", "stuvwxyz"))]


def main() -> None:
    warnings.filterwarnings("ignore")
    from transformers import AutoModel, AutoTokenizer

    print(
        "| family | attention | max abs diff, hidden states | max abs diff, mean-pooled | ONNX opset | ONNX max abs diff |"
    )
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for model_type in FAMILY_CONFIGS:
            path = make_tiny_family(model_type, Path(tmp) / model_type)
            tokenizer = AutoTokenizer.from_pretrained(path)
            reference = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
            batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
            with torch.no_grad():
                out = reference(
                    input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True
                )
            hidden = torch.stack(out.hidden_states)  # [L+1, B, T, H]
            encoder = Encoder(str(path))
            states = next(iter(encoder.iter_states(encoder.tokenize(TEXTS))))
            order = states.doc_index.numpy()
            diff_hidden = (states.hidden - hidden[:, order, : states.hidden.shape[2]]).abs().max().item()
            mask = batch["attention_mask"][:, :, None].float()
            pooled = (hidden[-1] * mask).sum(1) / mask.sum(1)
            got = Embedder(Recipe(model=str(path)), encoder=encoder).encode(TEXTS)
            diff_pooled = float(abs(got - pooled.numpy()).max())
            outcome = run_export_onnx(Recipe(model=str(path)), Path(tmp) / f"{model_type}-onnx", TEXTS, "texts")
            implementation = encoder.model.config._attn_implementation
            print(
                f"| {model_type} | {implementation} | {diff_hidden:.1e} | {diff_pooled:.1e} | {outcome.record['opset']} "
                f"| {outcome.parity.max_abs_diff:.1e} |"
            )


if __name__ == "__main__":
    main()
