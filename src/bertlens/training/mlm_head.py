"""The masked-language-model head on top of an encoder: the model's own, or a new one tied to its embeddings.

A BERT pre-training checkpoint (BertForPreTraining / BertForMaskedLM) stores the head under
`cls.predictions.*`; it is loaded as it was trained. A model without one (a sentence-transformers
encoder such as the default model) gets a fresh head whose output layer is the input embedding
matrix itself (weight tying, as BERT does), so it starts from the model's own vocabulary geometry.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open
from torch import nn

from bertlens.errors import BertlensError

PREFIX = "cls.predictions."


@dataclass(frozen=True)
class HeadOrigin:
    loaded: bool  # True: the checkpoint's own head; False: new, tied to the input embeddings
    note: str


def _checkpoint_head(model_dir: Path) -> dict[str, torch.Tensor]:
    """Tensors of the checkpoint's MLM head, named relative to BertOnlyMLMHead (may be empty)."""
    tensors = {}
    for file in sorted(model_dir.glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as handle:
            for key in handle.keys():
                if key.startswith(PREFIX):
                    tensors["predictions." + key[len(PREFIX) :]] = handle.get_tensor(key)
    return tensors


def mlm_head(encoder_model: nn.Module, model_dir: Path) -> tuple[nn.Module, HeadOrigin]:
    """A BertOnlyMLMHead for `encoder_model`, its decoder tied to the input embeddings."""
    from transformers.models.bert.modeling_bert import BertOnlyMLMHead

    config = encoder_model.config
    head = BertOnlyMLMHead(config)
    embeddings = encoder_model.get_input_embeddings().weight  # [V, H]
    saved = _checkpoint_head(Path(model_dir))
    if saved:
        missing, unexpected = head.load_state_dict(saved, strict=False)
        allowed = {"predictions.decoder.weight", "predictions.decoder.bias"}  # tied or stored once as the bias
        if set(missing) - allowed or unexpected:
            raise BertlensError(
                f"{model_dir}: its masked-LM head (cls.predictions.*) does not fit this model "
                f"(missing {sorted(set(missing) - allowed)[:3]}, unexpected {unexpected[:3]}); remove the head file or "
                "use the model it was trained with"
            )
        origin = HeadOrigin(True, "the model's own masked-LM head")
    else:
        origin = HeadOrigin(
            False,
            "the model has no masked-LM head: a new one was initialised, its output layer tied to the input embeddings",
        )
    head.predictions.decoder.weight = embeddings  # tied: one parameter, as in BERT
    head.predictions.decoder.bias = head.predictions.bias  # the output bias is stored once, as Hugging Face ties it
    return head, origin
