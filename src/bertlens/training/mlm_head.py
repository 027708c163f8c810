"""The masked-language-model head on top of an encoder: the checkpoint's own, or a new one tied to its embeddings.

Each family's head is the one its `*ForMaskedLM` class defines (families.py names the attributes:
BERT's `cls`, RoBERTa's `lm_head`, DistilBERT's `vocab_transform` ... `vocab_projector`, ELECTRA's
generator head, ModernBERT's `head` + `decoder`, ...). Its weights come from the checkpoint when it
stores them under those names (a `*ForMaskedLM` or pre-training checkpoint, or a bertlens `pretrain`
output), and are initialised (seeded) only when absent, which the origin says. The output layer is
the encoder's own input embedding matrix (weight tying, as these models are trained), so ELECTRA's
narrower embeddings and projected head fit as they do in the original.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open
from torch import nn

from bertlens.errors import BertlensError
from bertlens.families import require_family


@dataclass(frozen=True)
class HeadOrigin:
    loaded: bool  # True: the checkpoint's own head; False: new, tied to the input embeddings
    note: str


def _checkpoint_tensors(model_dir: Path, prefixes: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """Tensors of every *.safetensors file in `model_dir` whose names start with one of `prefixes` (may be none)."""
    tensors = {}
    for file in sorted(Path(model_dir).glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as handle:
            for key in handle.keys():
                if key.startswith(prefixes):
                    tensors[key] = handle.get_tensor(key)
    return tensors


def _shared(head: nn.Module, tied: nn.Parameter) -> set[str]:
    """Head entries that are not stored on their own: the tied embedding, and later names of a shared tensor
    (BERT keeps the output bias as both predictions.bias and predictions.decoder.bias)."""
    seen, out = {id(tied)}, set()
    for name, tensor in head.state_dict(keep_vars=True).items():
        if id(tensor) in seen:
            out.add(name)
        seen.add(id(tensor))
    return out


def head_tensors(head: nn.Module, encoder_model: nn.Module) -> dict[str, torch.Tensor]:
    """The head's own tensors, by the names its *ForMaskedLM class gives them, without tied or repeated ones."""
    skip = _shared(head, encoder_model.get_input_embeddings().weight)
    return {name: t.detach().contiguous() for name, t in head.state_dict().items() if name not in skip}


def _new_head(encoder_model: nn.Module, attributes: tuple[str, ...], seed: int, trust_remote_code: bool):
    from transformers import AutoModelForMaskedLM

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        masked = AutoModelForMaskedLM.from_config(encoder_model.config, trust_remote_code=trust_remote_code)
    missing = [a for a in attributes if getattr(masked, a, None) is None]
    if missing:
        raise BertlensError(
            f"{type(masked).__name__} has no {', '.join(missing)}: its masked-LM head is not where the family "
            "table says (families.py)"
        )
    output = masked.get_output_embeddings()
    return nn.Sequential(OrderedDict((a, getattr(masked, a)) for a in attributes)), output


def mlm_head(
    encoder_model: nn.Module, model_dir: Path, *, seed: int = 0, trust_remote_code: bool = False
) -> tuple[nn.Module, HeadOrigin]:
    """hidden states [..., H] -> vocabulary logits [..., V]: the family's head, the checkpoint's weights if it has
    them, its output layer tied to `encoder_model`'s input embeddings."""
    config = encoder_model.config
    family = require_family(getattr(config, "model_type", None), str(model_dir), "where its masked-LM head is")
    head, output = _new_head(encoder_model, family.mlm_head, seed, trust_remote_code)
    tied = getattr(config, "tie_word_embeddings", True)
    allowed = _shared(
        head, output.weight if tied else nn.Parameter(torch.empty(0))
    )  # absent from checkpoints by design
    expected = set(head.state_dict())  # a pre-training checkpoint's other heads (BERT's NSP under cls.) are not ours
    saved = _checkpoint_tensors(Path(model_dir), tuple(f"{a}." for a in family.mlm_head))
    saved = {k: v for k, v in saved.items() if k in expected}
    if saved:
        try:
            missing, _ = head.load_state_dict(saved, strict=False)
        except RuntimeError as exc:  # a tensor of another shape
            missing, mismatch = [], " ".join(str(exc).split())[:200]
        else:
            mismatch = ""
        if set(missing) - allowed or mismatch:
            raise BertlensError(
                f"{model_dir}: its masked-LM head ({', '.join(family.mlm_head)}) does not fit this model "
                f"({mismatch or f'missing {sorted(set(missing) - allowed)[:3]}'}); remove the head or use the model it "
                "was trained with"
            )
        origin = HeadOrigin(True, f"the model's own masked-LM head ({family.name}: {', '.join(family.mlm_head)})")
    else:
        origin = HeadOrigin(
            False,
            f"the model has no masked-LM head: a new {family.name} head was initialised (seed {seed}), its output "
            "layer tied to the input embeddings",
        )
    if tied:
        output.weight = encoder_model.get_input_embeddings().weight  # [V, E]: one parameter, as these models train
    return head, origin
