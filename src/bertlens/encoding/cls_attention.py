"""The [CLS] row of every layer's attention, without running eager attention everywhere.

For BERT-style self-attention (softmax(q k^T / sqrt(d) + mask), absolute positions) the
[CLS] query's weights follow exactly from the query and key projections, which forward hooks
capture. That keeps the fast SDPA kernels for the rest of the model. Other architectures
(relative positions, disentangled attention, ...) fall back to eager attention.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import torch
from torch import nn

from bertlens.families import family_of, submodule


def attention_modules(model: nn.Module) -> list[nn.Module] | None:
    """One self-attention module per layer, in order, where the family table says the hooks are exact (BERT-style
    self-attention, absolute positions, a module per layer: families.py); else None (eager attention instead)."""
    config = model.config
    family = family_of(getattr(config, "model_type", None))
    if family is None or family.cls_attention is None or family.shared_layers:
        return None
    if getattr(config, "position_embedding_type", "absolute") not in (None, "absolute"):
        return None
    layers = submodule(model, family.layers)
    found = [submodule(layer, family.cls_attention) for layer in layers] if layers is not None else []
    usable = all(m is not None and hasattr(m, "query") and hasattr(m, "key") for m in found)
    return found if found and usable and len(found) == config.num_hidden_layers else None


class ClsAttentionRecorder:
    """Hooks on each layer's query and key projections; `weights(mask)` -> [L, B, T] after a forward.

    What the hooks capture is kept per thread, so threads running forwards on the same model at once
    (`serve --workers`) each read their own batch's queries and keys.
    """

    def __init__(self, modules: list[nn.Module]):
        self.modules = modules
        self._captured = threading.local()
        self.handles = []
        for i, module in enumerate(modules):
            self.handles.append(module.query.register_forward_hook(self._keep("queries", i, cls_only=True)))
            self.handles.append(module.key.register_forward_hook(self._keep("keys", i, cls_only=False)))

    def _store(self, name: str) -> list[torch.Tensor | None]:
        """This thread's captured tensors of one kind, one slot per layer."""
        store = getattr(self._captured, name, None)
        if store is None:
            store = [None] * len(self.modules)
            setattr(self._captured, name, store)
        return store

    def _keep(self, name: str, index: int, cls_only: bool):
        def hook(module, inputs, output):
            self._store(name)[index] = output[:, :1] if cls_only else output  # [B, 1, H] or [B, T, H]

        return hook

    def weights(self, attention_mask: torch.Tensor) -> torch.Tensor:
        """Head-averaged [CLS] attention per layer: [L, B, T]."""
        blocked = ~attention_mask.bool()[:, None, None, :]  # [B, 1, 1, T]
        rows = []
        for module, q, k in zip(self.modules, self._store("queries"), self._store("keys")):
            heads, size = module.num_attention_heads, module.attention_head_size
            batch, length, _ = k.shape
            q = q.float().view(batch, 1, heads, size).transpose(1, 2)  # [B, heads, 1, d]
            k = k.float().view(batch, length, heads, size).transpose(1, 2)  # [B, heads, T, d]
            scores = (q @ k.transpose(-1, -2)) * size**-0.5  # [B, heads, 1, T]
            probs = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)  # [B, heads, 1, T]
            rows.append(probs[:, :, 0].mean(dim=1))  # [B, T]
        return torch.stack(rows)  # [L, B, T]


def cls_rows(attentions: Sequence[torch.Tensor]) -> torch.Tensor:
    """Head-averaged [CLS] rows of full attention maps [B, heads, T, T] per layer -> [L, B, T]: what `weights`
    computes from the hooks, for models whose maps come back whole (eager attention, the ONNX export)."""
    return torch.stack([a[:, :, 0, :].float().mean(dim=1) for a in attentions])  # [L, B, T]
