"""Fine-tuning strategies as data: which blocks train, from which epoch, at which learning rate.

Grammar: BASE[+reinit:K]
  frozen       encoder untouched; a linear head on frozen features
  full         every block trains
  partial:K    embeddings and the bottom K layers frozen
  gradual      ULMFiT gradual unfreezing (Howard & Ruder 2018): the top layer (and head) in
               epoch 0, one more layer each epoch, the embeddings last
  llrd[:D]     layer-wise learning-rate decay (discriminative rates; Howard & Ruder 2018,
               Sun et al. 2019): layer l trains at lr * D^(L - l), embeddings at lr * D^L (D = 0.9)
  +reinit:K    re-initialise the top K layers before training (Zhang et al. 2021)
"""

from __future__ import annotations

from dataclasses import dataclass

from bertlens.errors import BertlensError, did_you_mean

BASES = ("frozen", "full", "partial", "gradual", "llrd")
DEFAULT_DECAY = 0.9


@dataclass(frozen=True)
class Strategy:
    kind: str
    freeze_bottom: int = 0
    decay: float = 1.0
    reinit_top: int = 0

    @property
    def name(self) -> str:
        base = {"partial": f"partial:{self.freeze_bottom}", "llrd": f"llrd:{self.decay:g}"}.get(self.kind, self.kind)
        return base + (f"+reinit:{self.reinit_top}" if self.reinit_top else "")

    @property
    def fine_tunes(self) -> bool:
        return self.kind != "frozen"

    def trainable_blocks(self, num_layers: int, epoch: int) -> tuple[int, ...]:
        """Blocks (0 = embeddings, 1..L layers) that train during `epoch` (0-based)."""
        if self.kind == "frozen":
            return ()
        if self.kind == "partial":
            return tuple(range(self.freeze_bottom + 1, num_layers + 1))
        if self.kind == "gradual":
            return tuple(range(max(num_layers - epoch, 0), num_layers + 1))
        return tuple(range(num_layers + 1))

    def block_lr(self, block: int, num_layers: int, lr: float) -> float:
        return lr * self.decay ** (num_layers - block) if self.kind == "llrd" else lr


def _int(text: str, what: str, where: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise BertlensError(f"strategy '{where}': {what} must be an integer, got '{text}'") from None
    if value < 0:
        raise BertlensError(f"strategy '{where}': {what} must be 0 or more, got {value}")
    return value


def parse_strategy(text: str, num_layers: int) -> Strategy:
    """'partial:4', 'llrd:0.95+reinit:2', ... -> Strategy, checked against the model's layer count."""
    spec = text.strip()
    base, _, extra = spec.partition("+")
    reinit = 0
    if extra:
        key, _, value = extra.partition(":")
        if key != "reinit" or not value:
            raise BertlensError(f"strategy '{spec}': after '+' only 'reinit:K' is allowed")
        reinit = _int(value, "reinit K", spec)
    kind, _, arg = base.partition(":")
    if kind not in BASES:
        raise BertlensError(
            f"unknown strategy '{kind}' in '{spec}': {did_you_mean(kind, BASES)} "
            "(forms: frozen, full, partial:K, gradual, llrd[:DECAY], each with optional +reinit:K)"
        )
    if arg and kind not in ("partial", "llrd"):
        raise BertlensError(f"strategy '{spec}': '{kind}' takes no argument")
    freeze, decay = 0, 1.0
    if kind == "partial":
        if not arg:
            raise BertlensError(f"strategy '{spec}': partial needs the number of frozen layers, e.g. partial:4")
        freeze = _int(arg, "the number of frozen layers", spec)
        if freeze >= num_layers:
            raise BertlensError(
                f"strategy '{spec}': the model has {num_layers} layers, so partial:K needs K < {num_layers} "
                "(use 'frozen' to freeze everything)"
            )
    if kind == "llrd":
        try:
            decay = float(arg) if arg else DEFAULT_DECAY
        except ValueError:
            raise BertlensError(f"strategy '{spec}': decay must be a number in (0, 1], got '{arg}'") from None
        if not 0 < decay <= 1:
            raise BertlensError(f"strategy '{spec}': decay must be in (0, 1], got {decay}")
    if reinit > num_layers:
        raise BertlensError(f"strategy '{spec}': cannot re-initialise {reinit} layers of a {num_layers}-layer model")
    if kind == "frozen" and reinit:
        raise BertlensError(f"strategy '{spec}': re-initialising layers of a frozen encoder would only destroy them")
    return Strategy(kind, freeze, decay, reinit)


def parse_strategies(text: str, num_layers: int) -> tuple[Strategy, ...]:
    items = [s for s in text.split(",") if s.strip()]
    if not items:
        raise BertlensError("--strategies is empty; e.g. frozen,partial:4,full,gradual")
    return tuple(parse_strategy(s, num_layers) for s in items)
