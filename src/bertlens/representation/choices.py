"""The names of every representation choice, and their parsing and checks: importable without torch.

The poolers and mixers themselves live in poolers.py and mixers.py (torch); their names, the layer
specs and the recipe's precisions are here, so `bertlens CMD --help` and `Recipe` need no heavy import.
"""

from __future__ import annotations

from collections.abc import Sequence

from bertlens.errors import BertlensError, did_you_mean

CLS_ATTENTION = "cls_attention"  # the [CLS] row of the last layer's attention (encoding/cls_attention.py)
# What each pooler reads from the encoder beyond the hidden states: the encoder is built with these, and nothing
# else asks a pooler's name (poolers.POOLERS has one function per name).
POOLER_READS: dict[str, tuple[str, ...]] = {"cls": (), "mean": (), "max": (), "attention": (CLS_ATTENTION,)}
POOLER_NAMES = tuple(POOLER_READS)
TOKENS = "tokens"  # a recipe's pooler when it keeps every token's vector (late interaction: no pooling)
DEFAULT_POOLERS = POOLER_NAMES  # what a sweep banks unless told otherwise
MIXERS = ("single", "mean", "sum", "concat", "first_last", "scalar_mix")
LINEAR_MIXERS = frozenset({"single", "mean", "sum", "concat", "first_last"})
PRECISIONS = ("fp32", "bf16", "auto")  # auto: bf16 where the hardware has it, else fp32
BACKENDS = ("torch", "onnx", "openvino", "ray")  # embedding/backends.BUILDERS has one builder per name
SERVED_BACKENDS = (
    "torch",
    "onnx",
    "openvino",
)  # what `serve --backend` runs (a Ray pool embeds files, it does not serve)
EXPORT_BACKENDS = ("onnx", "openvino")  # the runtimes of an export directory (`bertlens export`): its recipe is fixed


def check_pooler(name: str) -> str:
    if name not in POOLER_READS:
        raise BertlensError(f"unknown pooler '{name}': {did_you_mean(name, POOLER_READS)}")
    return name


def needs_cls_attention(poolers: Sequence[str]) -> bool:
    """Whether any of these poolers reads the [CLS] attention (the encoder must then return it)."""
    return any(CLS_ATTENTION in POOLER_READS[check_pooler(p)] for p in poolers)


def attentions_for(poolers: Sequence[str]) -> str:
    """The Encoder's `attentions` setting these poolers need: 'cls' or 'none'."""
    return "cls" if needs_cls_attention(poolers) else "none"


def check_mixer(name: str) -> str:
    if name not in MIXERS:
        raise BertlensError(f"unknown mixer '{name}': {did_you_mean(name, MIXERS)}")
    return name


def resolve_layers(layers: Sequence[int], num_layers: int) -> tuple[int, ...]:
    """Map (possibly negative) layer indices onto 0..num_layers (0 = embedding output)."""
    count = num_layers + 1
    resolved = []
    for layer in layers:
        if not -count <= layer < count:
            raise BertlensError(
                f"layer {layer} is out of range for a {num_layers}-layer model: valid are 0..{num_layers} "
                f"(0 = embeddings) or -{count}..-1"
            )
        resolved.append(layer % count)
    return tuple(resolved)


def mixed_layers(mixer: str, layers: Sequence[int], num_layers: int) -> tuple[int, ...]:
    """The layers (0..num_layers) a mix reads: 'first_last' ignores `layers` and reads layer 1 (the first
    transformer layer) and the last, as SimCSE's evaluation does; every other mixer reads `layers`."""
    return resolve_layers((1, -1) if check_mixer(mixer) == "first_last" else layers, num_layers)


def parse_layers(spec: str, num_layers: int) -> tuple[int, ...]:
    """Parse '-1', '-4,-3,-2,-1', '-4:' or '1:7' (Python slice, over 0..num_layers) or 'all'."""
    count = num_layers + 1
    indices: list[int] = []
    for part in spec.replace(" ", "").split(","):
        if part == "all":
            indices.extend(range(count))
        elif ":" in part:
            start, _, stop = part.partition(":")
            try:
                window = slice(int(start) if start else None, int(stop) if stop else None)
            except ValueError:
                raise BertlensError(f"layer spec '{spec}': '{part}' is not a slice like '-4:' or '1:7'") from None
            picked = list(range(count))[window]
            if not picked:
                raise BertlensError(f"layer spec '{spec}': slice '{part}' selects no layer of 0..{num_layers}")
            indices.extend(picked)
        else:
            try:
                indices.append(int(part))
            except ValueError:
                raise BertlensError(
                    f"layer spec '{spec}': '{part}' is not an integer; use e.g. -1 or -4: or 0,6"
                ) from None
    return resolve_layers(indices, num_layers)


def output_blocks(mixer: str, layers: Sequence[int]) -> int:
    """How many hidden-size blocks a mix produces: one per layer for concat, else one."""
    return len(layers) if mixer == "concat" else 1
