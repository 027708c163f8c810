"""One training loop for every fine-tuning strategy.

Shared by all strategies: AdamW (no weight decay on biases and norms), linear warmup then
linear decay, gradient clipping, early stopping on the dev score with the best weights
restored, a fixed seed (data order per epoch and dropout), and checkpoints every
`checkpoint_every` steps and at each epoch end, from which an interrupted run resumes to the
same weights as an uninterrupted one. The strategy only decides which blocks train in each
epoch and each block's learning rate.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from bertlens.embedder import represent
from bertlens.encoding.batching import length_batches
from bertlens.encoding.encoder import Encoder, LayerStates, Tokenized
from bertlens.errors import BertlensError
from bertlens.evaluation.bootstrap import spearman
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import Split
from bertlens.training.blocks import block_of_parameters, encoder_blocks, reinitialise_top
from bertlens.training.checkpoint import find_checkpoint, load_checkpoint, save_checkpoint
from bertlens.training.heads import Head
from bertlens.training.strategies import Strategy

NO_DECAY = ("bias", "LayerNorm.weight", "layer_norm.weight", "norm.weight")


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 5e-5
    head_lr: float = 1e-3
    epochs: int = 4
    min_steps: int = 100  # small training sets run more epochs, so every size gets some updates
    batch_size: int = 16
    warmup: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    patience: int = 2
    seed: int = 0
    checkpoint_every: int = 50


@dataclass(frozen=True)
class FineTuneResult:
    history: tuple[float, ...]  # dev score after each epoch
    best_epoch: int
    best_dev: float
    steps: int
    epochs_run: int
    stopped_early: bool
    seconds: float


@dataclass(frozen=True)
class Encoded:
    """Tokenized texts of one split (one or two sides) and its targets."""

    a: Tokenized
    b: Tokenized | None
    targets: np.ndarray

    @classmethod
    def of(cls, encoder: Encoder, split: Split) -> Encoded:
        b = encoder.tokenize(split.texts_b) if split.texts_b is not None else None
        return cls(encoder.tokenize(split.texts_a), b, split.targets)

    def __len__(self) -> int:
        return len(self.targets)


def lr_factor(step: int, total: int, warmup: int) -> float:
    """Linear warmup to 1 over `warmup` steps, then linear decay to 0 at `total`."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def sentence_vectors(encoder: Encoder, recipe: Recipe, tokenized: Tokenized, rows: np.ndarray) -> torch.Tensor:
    """Differentiable recipe vectors [B, D] for the given rows (the model's current mode applies)."""
    batch = encoder.pad(tokenized, rows)
    special = batch.pop("special_tokens_mask")
    out = encoder.model(**batch, output_hidden_states=True)
    states = LayerStates(hidden=torch.stack(out.hidden_states), attention_mask=batch["attention_mask"].bool(),
                         special_tokens_mask=special, doc_index=torch.as_tensor(rows))  # hidden [L+1, B, T, H]
    return represent(recipe, states)


def _outputs(encoder: Encoder, recipe: Recipe, head: Head, data: Encoded, rows: np.ndarray) -> torch.Tensor:
    u = sentence_vectors(encoder, recipe, data.a, rows)
    v = sentence_vectors(encoder, recipe, data.b, rows) if data.b is not None else None
    return head(u, v)


def predict(encoder: Encoder, recipe: Recipe, head: Head, data: Encoded, batch_size: int = 64) -> np.ndarray:
    """Class ids or similarity scores [n] in input order (eval mode, no gradients)."""
    encoder.model.eval()
    head.eval()
    out = np.zeros(len(data), dtype=np.float64)
    lengths = data.a.lengths if data.b is None else np.maximum(data.a.lengths, data.b.lengths)
    with torch.no_grad():
        for rows in length_batches(lengths, batch_size, batch_size * 128):
            out[rows] = head.predict(_outputs(encoder, recipe, head, data, rows)).double().numpy()
    return out


def score(predictions: np.ndarray, targets: np.ndarray, kind: str) -> float:
    if kind == "similarity":
        return float(spearman(predictions, targets))
    return float((predictions == targets).mean())


def _param_groups(model, head: Head, strategy: Strategy, config: TrainConfig, num_layers: int) -> list[dict]:
    """One AdamW group per (block, decay or not), each with its own base learning rate, plus the head."""
    blocks = block_of_parameters(model)
    groups: dict[tuple[int, bool], dict] = {}
    for name, param in model.named_parameters():
        if name not in blocks:
            param.requires_grad_(False)  # e.g. BERT's pooler: no recipe reads it
            continue
        block = blocks[name]
        no_decay = any(name.endswith(suffix) for suffix in NO_DECAY)
        group = groups.setdefault((block, no_decay), {
            "params": [], "block": block, "base_lr": strategy.block_lr(block, num_layers, config.lr),
            "weight_decay": 0.0 if no_decay else config.weight_decay})
        group["params"].append(param)
    head_group = {"params": list(head.parameters()), "block": -1, "base_lr": config.head_lr, "weight_decay": 0.0}
    ordered = [groups[key] for key in sorted(groups)] + ([head_group] if head_group["params"] else [])
    for group in ordered:
        group["lr"] = group["base_lr"]
    return ordered


def apply_strategy(model, strategy: Strategy, num_layers: int, epoch: int) -> tuple[int, ...]:
    """Set requires_grad for `epoch`; returns the trainable blocks."""
    trainable = strategy.trainable_blocks(num_layers, epoch)
    for index, block in enumerate(encoder_blocks(model)):
        block.requires_grad_(index in trainable)
    return trainable


def run_key(encoder: Encoder, recipe: Recipe, strategy: Strategy, config: TrainConfig, train: Encoded) -> str:
    digest = hashlib.sha256(json.dumps([encoder.ref.fingerprint, recipe.to_dict(), strategy.name, asdict(config)]).encode())
    for ids in train.a.input_ids:
        digest.update(np.asarray(ids, dtype=np.int64).tobytes())
    digest.update(np.asarray(train.targets).tobytes())
    return digest.hexdigest()[:16]


def fine_tune(
    encoder: Encoder,
    recipe: Recipe,
    head: Head,
    strategy: Strategy,
    train: Encoded,
    dev: Encoded,
    kind: str,
    config: TrainConfig = TrainConfig(),
    *,
    checkpoint_dir: Path | None = None,
    on_step: Callable[[int, int], None] | None = None,
) -> FineTuneResult:
    """Train encoder + head with `strategy`; the model ends with its best-dev weights."""
    if not strategy.fine_tunes:
        raise ValueError("the frozen strategy trains a probe on frozen features, not this loop")
    if recipe.pooler == "attention":
        raise BertlensError("fine-tuning with the 'attention' pooler is not supported; use cls, mean or max")
    start_time = time.perf_counter()
    model = encoder.model
    num_layers = encoder.num_layers
    torch.manual_seed(config.seed)
    reinitialise_top(model, strategy.reinit_top, config.seed)
    groups = _param_groups(model, head, strategy, config, num_layers)
    optimizer = torch.optim.AdamW(groups, lr=config.lr)
    per_epoch = math.ceil(len(train) / config.batch_size)
    epochs = max(config.epochs, math.ceil(config.min_steps / per_epoch))
    total = epochs * per_epoch
    warmup = int(config.warmup * total)
    key = run_key(encoder, recipe, strategy, config, train)
    state = {"key": key, "step": 0, "history": [], "best": -math.inf, "best_epoch": -1, "bad_epochs": 0, "done": False}
    best = None
    found = find_checkpoint(checkpoint_dir) if checkpoint_dir else None
    if found is not None:
        saved = json.loads((found / "state.json").read_text())
        if saved.get("key") != key:
            raise BertlensError(f"{checkpoint_dir} holds a checkpoint of a different run (model, data, strategy or "
                                "settings changed); remove it or choose another output directory")
        state, best = load_checkpoint(found, model, head, optimizer)
    step = state["step"]
    while not state["done"] and step < total:
        epoch, offset = divmod(step, per_epoch)
        apply_strategy(model, strategy, num_layers, epoch)
        model.train()
        head.train()
        order = torch.randperm(len(train), generator=torch.Generator().manual_seed(config.seed * 100_003 + epoch)).numpy()
        for index in range(offset, per_epoch):
            rows = order[index * config.batch_size : (index + 1) * config.batch_size]
            for group in optimizer.param_groups:
                group["lr"] = group["base_lr"] * lr_factor(step, total, warmup)
            loss = head.loss(_outputs(encoder, recipe, head, train, rows), torch.as_tensor(train.targets[rows]))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            trainable = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
            torch.nn.utils.clip_grad_norm_(trainable, config.max_grad_norm)
            optimizer.step()
            step += 1
            if on_step:
                on_step(step, total)
            if checkpoint_dir and step % config.checkpoint_every == 0 and step % per_epoch:
                save_checkpoint(checkpoint_dir, model, head, optimizer, {**state, "step": step}, best)
        dev_score = score(predict(encoder, recipe, head, dev), dev.targets, kind)
        state["history"].append(dev_score)
        if dev_score > state["best"]:
            state.update(best=dev_score, best_epoch=epoch, bad_epochs=0)
            best = {"model": {k: v.detach().clone() for k, v in model.state_dict().items()},
                    "head": {k: v.detach().clone() for k, v in head.state_dict().items()}}
        else:
            state["bad_epochs"] += 1
        state["step"] = step
        state["done"] = state["bad_epochs"] >= config.patience or step >= total
        if checkpoint_dir:
            save_checkpoint(checkpoint_dir, model, head, optimizer, state, best)
    if best is not None:
        model.load_state_dict(best["model"])
        head.load_state_dict(best["head"])
    model.eval()
    head.eval()
    return FineTuneResult(tuple(state["history"]), state["best_epoch"], state["best"], step, len(state["history"]),
                          step < total, time.perf_counter() - start_time)
