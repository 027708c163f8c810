"""Data-parallel training under `torchrun --nproc-per-node N`, with plain collective calls.

Semantics as in DistributedDataParallel: every process holds the whole model, takes its own
slice of each global batch (global batch = per-process batch x processes), and the gradients
are averaged across processes before the (identical) optimizer step, so the replicas stay equal.
One process (rank 0) writes checkpoints and outputs. gloo on CPU, NCCL where GPUs exist. With
one process nothing here does anything, and training is exactly the single-process loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1

    @property
    def writer(self) -> bool:
        """The one process that writes checkpoints, outputs and progress."""
        return self.rank == 0


def setup() -> World:
    """Join the process group torchrun describes in the environment (WORLD_SIZE > 1), once."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size <= 1:
        return World()
    if not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return World(dist.get_rank(), dist.get_world_size())


def current() -> World:
    if dist.is_available() and dist.is_initialized():
        return World(dist.get_rank(), dist.get_world_size())
    return World()


def average_gradients(params: list[torch.nn.Parameter], world: World) -> None:
    """Average gradients across processes (a process whose batch had nothing to learn contributes zeros)."""
    if world.size == 1:
        return
    for param in params:
        if param.grad is None:
            param.grad = torch.zeros_like(param)
        dist.all_reduce(param.grad, op=dist.ReduceOp.SUM)
        param.grad /= world.size


def mean_over_processes(value: float | None, world: World) -> float | None:
    """The mean of the processes' values, leaving out processes that had none (an empty last batch)."""
    if world.size == 1:
        return value
    tensor = torch.tensor([value or 0.0, float(value is not None)], dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return float(tensor[0] / tensor[1]) if tensor[1] > 0 else None


def rng_states(world: World) -> list[torch.Tensor]:
    """Every process's torch RNG state, in rank order (all processes must call it; only the writer needs the result).

    Each process draws its own dropout and masks, so an exact resume restores each one's own stream.
    """
    state = torch.get_rng_state()  # [S] uint8
    if world.size == 1:
        return [state]
    gathered = [torch.empty_like(state) for _ in range(world.size)]
    dist.all_gather(gathered, state)
    return gathered


def barrier(world: World) -> None:
    if world.size > 1:
        dist.barrier()
