"""A fine-tuned model as a Hugging Face directory every bertlens command accepts.

OUT/ holds config.json + model.safetensors + tokenizer files (so `--model OUT` works for
embed, sweep and probe), recipe.json (pointing at OUT), head/ (head.json + head.safetensors)
(when the training had one) and training.json (strategy or objective, settings, history). Files are written into a staging
directory and moved in; recipe.json goes last and marks a complete save.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file

from bertlens.encoding.encoder import Encoder
from bertlens.io.atomic import write_json
from bertlens.representation.recipe import Recipe
from bertlens.training.heads import Head


def run_checkpoint(out: Path, restart: bool) -> Path:
    """OUT/checkpoint: where an interrupted training run resumes from; emptied first when restarting."""
    checkpoint = out / "checkpoint"
    if restart:
        shutil.rmtree(checkpoint, ignore_errors=True)
    return checkpoint


def save_finetuned(
    out: Path,
    encoder: Encoder,
    recipe: Recipe,
    head: Head | None,
    training: dict,
    tensors: dict[str, dict[str, torch.Tensor]] | None = None,
) -> Recipe:
    """`tensors`: extra safetensors files to save beside the model (name -> tensors), e.g. a masked-LM head."""
    out.mkdir(parents=True, exist_ok=True)
    staging = out / ".saving"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    encoder.model.save_pretrained(staging, safe_serialization=True)
    encoder.tokenizer.save_pretrained(staging)
    for name, values in (tensors or {}).items():
        save_file({k: v.detach().clone().contiguous() for k, v in values.items()}, str(staging / name))
    if head is not None:
        (staging / "head").mkdir()
        head.save(staging / "head")
    (out / "recipe.json").unlink(missing_ok=True)  # incomplete until written again below
    for item in staging.iterdir():
        target = out / item.name
        if target.is_dir():
            shutil.rmtree(target)
        item.replace(target)
    staging.rmdir()
    write_json(out / "training.json", training)
    saved = recipe.replace(model=str(out.resolve()))
    saved.save(out / "recipe.json")
    return saved


def load_training_record(out: Path) -> dict:
    return json.loads((out / "training.json").read_text())
