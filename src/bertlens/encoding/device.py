"""Where a model runs: `--device auto|cpu|cuda[:N]`, and how many tokens a batch may hold on a GPU.

`auto` takes the first CUDA device when torch sees one, the CPU otherwise. On a GPU the batch is cut by a
token budget sized to the card's free memory instead of the CPU's constant: the inference pass keeps every
layer's hidden states (the bank pools all of them) plus one layer's attention scores at a time.
"""

from __future__ import annotations

import torch

from bertlens.errors import BertlensError

DEVICES = ("auto", "cpu", "cuda", "cuda:N")
CPU_TOKENS = 16384  # the CPU's batch budget (encoding/batching.py cuts by padded tokens), for models up to 6 x 384
# ... and at most this many floats of kept hidden states ((L+1) x H per token) for a larger model: the default model's
# 16,384 tokens x 7 x 384. A base model (13 x 768) gets 4,411 tokens: its bank of long texts peaked at 5.6 GB with
# 16,384 and at 2.3 GB with 4,096, at the same speed (docs/results-log.md, issue #37)
CPU_STATE_FLOATS = CPU_TOKENS * 7 * 384
MEMORY_SHARE = 0.5  # of the free memory a batch may use: the rest is the allocator's slack and other work
MAX_GPU_TOKENS = 1 << 20


def resolve_device(spec: str | None) -> str:
    """'auto' (or None) -> 'cuda:0' when CUDA is visible, else 'cpu'; 'cuda[:N]' checked to exist; one line if not."""
    spec = (spec or "auto").strip().lower()
    if spec == "auto":
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if spec == "cpu":
        return "cpu"
    if spec == "cuda" or spec.startswith("cuda:"):
        index = spec.partition(":")[2] or "0"
        if not index.isdigit():
            raise BertlensError(f"--device {spec}: the device index must be a number, e.g. cuda:0")
        if not torch.cuda.is_available():
            raise BertlensError(f"--device {spec}: torch sees no CUDA device here; use --device cpu (or auto)")
        count = torch.cuda.device_count()
        if int(index) >= count:
            raise BertlensError(f"--device {spec}: only {count} CUDA device(s) here (cuda:0 to cuda:{count - 1})")
        return f"cuda:{int(index)}"
    raise BertlensError(f"unknown --device '{spec}': valid: {', '.join(DEVICES)}")


def token_budget(
    free_bytes: int,
    *,
    hidden_size: int,
    num_layers: int,
    heads: int,
    max_length: int,
    element_bytes: int = 2,
    share: float = MEMORY_SHARE,
) -> int:
    """Tokens a batch may hold so its activations fit in `share` of `free_bytes`.

    Per token: every layer's hidden state is kept ((L+1) x H), the running layer needs about 4H for its
    feed-forward activations and 3H for q/k/v, and attention scores take heads x T per token at length T
    (eager attention; SDPA's fused kernels need less, so this is the safe side).
    """
    per_token = element_bytes * ((num_layers + 1) * hidden_size + 7 * hidden_size + heads * max_length)
    tokens = int(share * free_bytes // max(per_token, 1))
    return max(max_length, min(tokens, MAX_GPU_TOKENS))  # at least one full-length text per batch


def batch_tokens(device: str, model, max_length: int) -> int:
    """The batch budget for `model` on `device`: on the CPU the constant, scaled down for a model whose kept hidden
    states per token exceed the default model's; on a GPU sized to its free memory now."""
    config = model.config
    if not device.startswith("cuda"):
        per_token = (config.num_hidden_layers + 1) * config.hidden_size
        return max(max_length, min(CPU_TOKENS, CPU_STATE_FLOATS // per_token))
    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return token_budget(
        free,
        hidden_size=config.hidden_size,
        num_layers=config.num_hidden_layers,
        heads=config.num_attention_heads,
        max_length=max_length,
    )
