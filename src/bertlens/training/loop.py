"""ONE training loop for every objective and every fine-tuning strategy.

Shared by all: AdamW (no weight decay on biases and norms), linear warmup then linear decay,
gradient clipping, early stopping on the objective's dev score with the best weights restored
(objectives without a dev score train for the full schedule; dev is scored at an epoch's end, or once `eval_every`
steps have passed, and patience counts scores), a fixed seed (data order per
epoch and dropout), progress, and checkpoints every `checkpoint_every` steps (at an epoch's end once that many
steps have passed since the last, and when the run ends), from which an interrupted run resumes to the same
weights as an uninterrupted one. Not at every epoch's end: a small training set runs up to `min_steps` epochs
of one step each, and a checkpoint (weights, AdamW state, best weights) can cost more than the step itself.
The strategy decides which encoder blocks train in each epoch and at which learning rate; the
objective decides what a batch is, its loss, its dev score and its extra modules.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from torch import nn

from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.io.cache import content_key
from bertlens.progress import Progress, silent
from bertlens.training import distributed
from bertlens.training.blocks import apply_strategy_blocks, block_of_parameters, reinitialise_top
from bertlens.training.checkpoint import find_checkpoint, load_checkpoint, read_state, save_checkpoint
from bertlens.training.config import TrainConfig
from bertlens.training.strategies import Strategy

NO_DECAY = ("bias", "LayerNorm.weight", "layer_norm.weight", "norm.weight")


class Objective(Protocol):
    """What the loop needs from an objective (see objectives.py)."""

    name: str

    @property
    def size(self) -> int: ...

    def modules(self) -> dict[str, nn.Module]: ...

    def loss(self, rows: np.ndarray) -> torch.Tensor | None: ...

    def evaluate(self) -> float | None: ...

    def identity(self) -> str: ...


@dataclass(frozen=True)
class FineTuneResult:
    history: tuple[float, ...]  # dev score at each scoring epoch's end (empty when the objective has none)
    best_epoch: int
    best_dev: float
    steps: int
    epochs_run: int
    stopped_early: bool
    seconds: float
    first_loss: float
    last_loss: float  # mean over the last 10% of steps
    losses: tuple[float, ...] = ()  # the training loss of every step (mean over processes under torchrun)


def lr_factor(step: int, total: int, warmup: int) -> float:
    """Linear warmup to 1 over `warmup` steps, then linear decay to 0 at `total`."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def _param_groups(
    model: nn.Module | None,
    extra: dict[str, nn.Module],
    strategy: Strategy | None,
    config: TrainConfig,
    num_layers: int,
) -> list[dict]:
    """One AdamW group per (block, decay or not), each with its own base learning rate, plus the objective's modules."""
    blocks = block_of_parameters(model) if model is not None else {}
    groups: dict[tuple[int, bool], dict] = {}
    for name, param in model.named_parameters() if model is not None else ():
        if name not in blocks:
            param.requires_grad_(False)  # e.g. BERT's pooler: no recipe reads it (families.py: unused)
            continue
        block = blocks[name]
        no_decay = any(name.endswith(suffix) for suffix in NO_DECAY)
        group = groups.setdefault(
            (block, no_decay),
            {
                "params": [],
                "block": block,
                "base_lr": strategy.block_lr(block, num_layers, config.lr),
                "weight_decay": 0.0 if no_decay else config.weight_decay,
            },
        )
        group["params"].append(param)
    in_model = {id(p) for p in model.parameters()} if model is not None else set()  # a tied head shares them
    head_params = [
        p for module in extra.values() for p in module.parameters() if p.requires_grad and id(p) not in in_model
    ]
    head_group = {"params": head_params, "block": -1, "base_lr": config.head_lr, "weight_decay": 0.0}
    ordered = [groups[key] for key in sorted(groups)] + ([head_group] if head_params else [])
    for group in ordered:
        group["lr"] = group["base_lr"]
    return ordered


def apply_strategy(model: nn.Module, strategy: Strategy, num_layers: int, epoch: int) -> tuple[int, ...]:
    """Set requires_grad for `epoch`; returns the trainable blocks."""
    trainable = strategy.trainable_blocks(num_layers, epoch)
    apply_strategy_blocks(model, trainable)
    return trainable


def _distributed_step(loss: torch.Tensor | None, optimizer, config: TrainConfig, world, state: dict) -> None:
    """One data-parallel step: local backward, gradients averaged across processes, the same update everywhere.

    The recorded loss is the mean over processes, so a run on N processes with batch b logs what one
    process with batch N x b would (up to which examples got which masks).
    """
    optimizer.zero_grad(set_to_none=True)
    if loss is not None:
        loss.backward()
    params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]  # frozen blocks stay frozen
    distributed.average_gradients(params, world)
    torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
    optimizer.step()
    mean = distributed.mean_over_processes(float(loss.detach()) if loss is not None else None, world)
    if mean is not None:
        state["losses"].append(mean)


def _checkpoint(directory: Path, modules, optimizer, state: dict, best, world) -> None:
    """Every process hands in its RNG state (all must call this); the writer saves."""
    states = distributed.rng_states(world)
    if world.writer:
        save_checkpoint(directory, modules, optimizer, state, best, states)


def autocast_at(precision: str):
    """Mixed precision for forward passes (training steps, and dev and test scoring, so a bf16 run is scored at the
    speed it trains): bf16 matrix products where asked, fp32 master weights either way."""
    if precision not in ("fp32", "bf16"):
        raise BertlensError(f"unknown training precision '{precision}': valid: fp32, bf16")
    return torch.autocast(
        "cpu" if not torch.cuda.is_available() else "cuda", dtype=torch.bfloat16, enabled=precision == "bf16"
    )


def _set_mode(modules: dict[str, nn.Module], training: bool) -> None:
    for module in modules.values():
        module.train(training)


def _snapshot(modules: dict[str, nn.Module]) -> dict[str, dict[str, torch.Tensor]]:
    return {name: {k: v.detach().clone() for k, v in module.state_dict().items()} for name, module in modules.items()}


@dataclass
class _Run:
    """The loop's bookkeeping for one run: what a checkpoint saves besides weights (`state`), the best weights."""

    state: dict
    best: dict | None
    per_batch: int  # examples per optimiser step over every process
    per_epoch: int  # steps per epoch
    total: int  # steps in the schedule
    warmup: int  # warmup steps
    saved: int = 0  # the step of the last checkpoint written or resumed from (set when the run starts)


def scored_epochs(per_epoch: int, total: int, eval_every: int) -> int:
    """How many epoch ends score dev in a schedule of `total` steps (`per_epoch` a epoch) when no early stop comes:
    every epoch when eval_every is 0, else the first epoch end at least `eval_every` steps after the last score,
    and the last. The loop (`_due`) and recommend's estimate (workflows/fine_tune_step.py) count alike."""
    scored, last = 0, 0
    for step in range(per_epoch, total + 1, per_epoch):
        if _due(step, last, total, eval_every):
            scored, last = scored + 1, step
    return scored


def _due(step: int, last_scored: int, total: int, eval_every: int) -> bool:
    return eval_every <= 0 or step - last_scored >= eval_every or step >= total


def _schedule(objective: Objective, config: TrainConfig, world) -> tuple[int, int, int, int]:
    """(global batch, steps per epoch, total steps, warmup steps): small sets run more epochs (min_steps)."""
    per_batch = config.batch_size * world.size
    per_epoch = math.ceil(objective.size / per_batch)
    epochs = max(config.epochs, math.ceil(config.min_steps / per_epoch))
    total = epochs * per_epoch
    return per_batch, per_epoch, total, int(config.warmup * total)


def _start(key: str, checkpoint_dir: Path | None, modules, optimizer, world) -> tuple[dict, dict | None]:
    """A fresh state, or the one in `checkpoint_dir` when it belongs to this run (another run's is refused)."""
    state = {
        "key": key,
        "step": 0,
        "history": [],
        "losses": [],
        "best": -math.inf,
        "best_epoch": -1,
        "bad_epochs": 0,
        "scored_at": 0,  # the step dev was last scored at
        "done": False,
    }
    found = find_checkpoint(checkpoint_dir) if checkpoint_dir else None
    if found is None:
        return state, None
    if read_state(found).get("key") != key:
        raise BertlensError(
            f"{checkpoint_dir} holds a checkpoint of a different run (model, data, objective, strategy "
            "or settings changed); remove it or choose another output directory"
        )
    return load_checkpoint(found, modules, optimizer, world.rank)


def _step(objective: Objective, rows: np.ndarray, optimizer, config: TrainConfig, world, state: dict) -> None:
    """One optimiser step on `rows` (this process's slice of the global batch)."""
    with autocast_at(config.precision):
        loss = objective.loss(rows) if len(rows) else None
    if world.size > 1:
        _distributed_step(loss, optimizer, config, world, state)
    elif loss is not None:
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        trainable = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        torch.nn.utils.clip_grad_norm_(trainable, config.max_grad_norm)
        optimizer.step()
        state["losses"].append(float(loss.detach()))


def _epoch(run: _Run, objective, modules, optimizer, config, world, checkpoint_dir, progress) -> int:
    """The rest of the current epoch from the run's step; returns the step reached."""
    step = run.state["step"]
    epoch, offset = divmod(step, run.per_epoch)
    order = torch.randperm(
        objective.size, generator=torch.Generator().manual_seed(config.seed * 100_003 + epoch)
    ).numpy()
    for index in range(offset, run.per_epoch):
        rows = order[index * run.per_batch : (index + 1) * run.per_batch]
        rows = rows[world.rank * config.batch_size : (world.rank + 1) * config.batch_size]  # this process's slice
        for group in optimizer.param_groups:
            group["lr"] = group["base_lr"] * lr_factor(step, run.total, run.warmup)
        _step(objective, rows, optimizer, config, world, run.state)
        step += 1
        if world.writer:
            recent = run.state["losses"][-20:]
            progress(f"training | loss {np.mean(recent):.3f}" if recent else "training", step, run.total)
        if checkpoint_dir and step % config.checkpoint_every == 0 and step % run.per_epoch:
            _checkpoint(checkpoint_dir, modules, optimizer, {**run.state, "step": step}, run.best, world)
            run.saved = step
    return step


def _end_epoch(run: _Run, epoch: int, step: int, objective, modules, config: TrainConfig) -> None:
    """Score dev when due (and the objective has a dev score), keep the best weights, decide whether to stop."""
    state = run.state
    if not _due(step, state.get("scored_at", 0), run.total, config.eval_every):
        state.update(step=step, done=step >= run.total)
        return
    state["scored_at"] = step
    with autocast_at(config.precision):
        dev_score = objective.evaluate()
    if dev_score is not None:
        state["history"].append(dev_score)
        if dev_score > state["best"]:
            state.update(best=dev_score, best_epoch=epoch, bad_epochs=0)
            run.best = _snapshot(modules)
        else:
            state["bad_epochs"] += 1
    state["step"] = step
    state["done"] = state["bad_epochs"] >= config.patience or step >= run.total


def fine_tune(
    encoder: Encoder | None,
    objective: Objective,
    strategy: Strategy | None,
    config: TrainConfig = TrainConfig(),
    *,
    checkpoint_dir: Path | None = None,
    progress: Progress = silent,
) -> FineTuneResult:
    """Train the encoder (as `strategy` says) and the objective's modules; with a dev score, end on the best weights.

    encoder None (and strategy None): train only the objective's modules, e.g. a classifier over frozen
    vectors, with the same optimiser, schedule, early stopping and checkpoints.
    """
    if encoder is not None and not strategy.fine_tunes:
        raise ValueError("the frozen strategy trains a probe on frozen features, not this loop")
    start_time = time.perf_counter()
    model = encoder.model if encoder is not None else None
    num_layers = encoder.num_layers if encoder is not None else 0
    modules = {**({"model": model} if model is not None else {}), **objective.modules()}
    world = distributed.current()  # one process: exactly the single-process loop
    torch.manual_seed(config.seed)
    if model is not None:
        reinitialise_top(model, strategy.reinit_top, config.seed)
    optimizer = torch.optim.AdamW(_param_groups(model, objective.modules(), strategy, config, num_layers), lr=config.lr)
    if world.size > 1:
        torch.manual_seed(config.seed * 1_000 + world.rank)  # same weights, a different dropout and mask stream
    identity = [encoder.ref.fingerprint if encoder else "", objective.identity(), strategy.name if strategy else ""]
    settings = {k: v for k, v in asdict(config).items() if k != "eval_every" or v}  # the default keeps older keys
    key = content_key([*identity, settings] + ([world.size] if world.size > 1 else []))  # N processes: another run
    run = _Run(*_start(key, checkpoint_dir, modules, optimizer, world), *_schedule(objective, config, world))
    run.saved = run.state["step"]
    while not run.state["done"] and run.state["step"] < run.total:
        epoch = run.state["step"] // run.per_epoch
        if model is not None:
            apply_strategy(model, strategy, num_layers, epoch)
        _set_mode(modules, True)
        step = _epoch(run, objective, modules, optimizer, config, world, checkpoint_dir, progress)
        _end_epoch(run, epoch, step, objective, modules, config)
        if checkpoint_dir and (run.state["done"] or step - run.saved >= config.checkpoint_every):
            _checkpoint(checkpoint_dir, modules, optimizer, run.state, run.best, world)
            run.saved = step
        distributed.barrier(world)
    if run.best is not None:
        for name, module in modules.items():
            module.load_state_dict(run.best[name])
    _set_mode(modules, False)
    return _result(run, time.perf_counter() - start_time)


def _result(run: _Run, seconds: float) -> FineTuneResult:
    state = run.state
    losses = state["losses"] or [math.nan]
    tail = max(1, len(losses) // 10)
    step = state["step"]
    return FineTuneResult(
        tuple(state["history"]),
        state["best_epoch"],
        state["best"],
        step,
        math.ceil(step / run.per_epoch),
        step < run.total,
        seconds,
        losses[0],
        float(np.mean(losses[-tail:])),
        tuple(state["losses"]),
    )
