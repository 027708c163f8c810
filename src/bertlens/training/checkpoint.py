"""Training checkpoints without pickle: tensors in safetensors, everything else in JSON.

A checkpoint directory holds one NAME.safetensors per trained module (model = the encoder, then
the objective's: head, representation, ...), optimizer.safetensors + optimizer.json (AdamW
moments and step counts; group settings), rng.safetensors (torch's generator, for dropout) and
state.json (written last). A new checkpoint is built next to the
old one and swapped in by renames, so a kill at any moment leaves one complete checkpoint.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from bertlens.io.cache import file_sha256


def _save_tensors(tensors: dict[str, torch.Tensor], path: Path) -> None:
    """safetensors refuses tensors that share memory (tied weights): each is written as its own copy."""
    save_file({k: v.detach().clone().contiguous() for k, v in tensors.items()}, str(path))


def _optimizer_parts(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict]:
    state = optimizer.state_dict()
    tensors, scalars = {}, {}
    for index, values in state["state"].items():
        for key, value in values.items():
            if torch.is_tensor(value):
                tensors[f"{index}.{key}"] = value
            else:
                scalars[f"{index}.{key}"] = value
    return tensors, {"param_groups": state["param_groups"], "scalars": scalars}


def _optimizer_state(tensors: dict[str, torch.Tensor], meta: dict) -> dict:
    state: dict[int, dict] = {}
    for flat, value in [*tensors.items(), *meta["scalars"].items()]:
        index, key = flat.split(".", 1)
        state.setdefault(int(index), {})[key] = value
    return {"state": state, "param_groups": meta["param_groups"]}


def save_checkpoint(
    directory: Path,
    modules: dict[str, nn.Module],
    optimizer: torch.optim.Optimizer,
    state: dict,
    best: dict[str, dict[str, torch.Tensor]] | None,
    rng_states: list[torch.Tensor] | None = None,
) -> None:
    """Write a complete checkpoint to `directory` (replacing the previous one atomically).

    modules: name -> module (the encoder as "model", then the objective's modules); each is one
    `NAME.safetensors`, and the best weights so far (when the objective has a dev score) `best_NAME.safetensors`.
    rng_states: each process's RNG state in rank order under torchrun (default: this process's).
    """
    staging = directory.with_name(directory.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, module in modules.items():
        _save_tensors(module.state_dict(), staging / f"{name}.safetensors")
    tensors, meta = _optimizer_parts(optimizer)
    _save_tensors(tensors, staging / "optimizer.safetensors")
    (staging / "optimizer.json").write_text(json.dumps(meta))
    states = rng_states or [torch.get_rng_state()]
    _save_tensors({_rng_key(rank): state for rank, state in enumerate(states)}, staging / "rng.safetensors")
    for name, weights in (best or {}).items():
        _save_tensors(weights, staging / f"best_{name}.safetensors")
    files = {p.name: file_sha256(p) for p in sorted(staging.iterdir())}
    (staging / "state.json").write_text(json.dumps({**state, "modules": sorted(modules), "sha256": files}, indent=2))
    old = directory.with_name(directory.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if directory.exists():
        directory.rename(old)
    staging.rename(directory)
    shutil.rmtree(old, ignore_errors=True)


def find_checkpoint(directory: Path) -> Path | None:
    """The complete, verified checkpoint: `directory`, or its predecessor if a swap was interrupted.

    A checkpoint whose files do not match the checksums in its state.json is not used (a warning
    says so), so a damaged checkpoint means starting over, never resuming from wrong weights.
    """
    for candidate in (directory, directory.with_name(directory.name + ".old")):
        if not (candidate / "state.json").is_file():
            continue
        expected = read_state(candidate).get("sha256")
        damaged = not isinstance(expected, dict) or any(
            not (candidate / name).is_file() or file_sha256(candidate / name) != digest
            for name, digest in expected.items()
        )
        if not damaged:
            return candidate
        warnings.warn(
            f"checkpoint {candidate} is damaged (a file is missing or failed its checksum); not resuming from it",
            stacklevel=2,
        )
    return None


def read_state(directory: Path) -> dict:
    """The loop's state (step, history, run key) without loading any weights; {} when unreadable."""
    try:
        return json.loads((directory / "state.json").read_text())
    except (OSError, ValueError):
        return {}


def _rng_key(rank: int) -> str:
    return "torch" if rank == 0 else f"torch_rank{rank}"


def load_checkpoint(directory: Path, modules: dict[str, nn.Module], optimizer: torch.optim.Optimizer, rank: int = 0):
    """Restore weights, optimizer and this process's RNG in place; returns (state, best weights by module or None)."""
    state = read_state(directory)
    for name, module in modules.items():
        module.load_state_dict(load_file(str(directory / f"{name}.safetensors")))
    meta = json.loads((directory / "optimizer.json").read_text())
    optimizer.load_state_dict(_optimizer_state(load_file(str(directory / "optimizer.safetensors")), meta))
    torch.set_rng_state(load_file(str(directory / "rng.safetensors"))[_rng_key(rank)])
    best = {
        name: load_file(str(directory / f"best_{name}.safetensors"))
        for name in modules
        if (directory / f"best_{name}.safetensors").is_file()
    } or None
    state.pop("modules", None)
    state.pop("sha256", None)
    return state, best
