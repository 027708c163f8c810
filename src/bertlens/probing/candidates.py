"""Sweep candidates: (pooler, layer mix) pairs, their features from the bank, their Recipe.

Exact from the bank: every single layer x pooler; for cls/mean/attention every linear mix
(mix of pooled == pooled mix); concatenation for every pooler (max is per dimension, so it
commutes with concatenation). Max-pooled mean mixes come from `bank.max_mixes`, pooled at
encode time. A ScalarMix is learned for cls/mean/attention only: for max it would need the
token states again (a second pass), so the sweep leaves it out and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bertlens.errors import OptionError, literal
from bertlens.features.bank import Bank, named_mixes
from bertlens.representation.choices import TOKENS
from bertlens.representation.late_interaction import TokenReading
from bertlens.representation.mixers import mixed_layers, output_blocks, resolve_layers
from bertlens.representation.poolers import LINEAR_POOLERS
from bertlens.representation.recipe import Recipe
from bertlens.representation.token_projection import TOKEN_DIM

POSTPROCESS_FILE = "postprocess.safetensors"  # written next to the sweep's recipe.json
TOKEN_PROJECTION_FILE = "token_projection.safetensors"  # a multi-vector recipe's reduction, next to its recipe
LIMITATIONS = (
    "ScalarMix over max-pooled layers is not scored: max pooling does not commute with mixing, "
    "so it would need a second encoding pass.",
)


@dataclass(frozen=True)
class PromptSet:
    """A named pair of prompts scored as one retrieval candidate family, e.g. e5 = ('query: ', 'passage: ')."""

    name: str
    query: str
    document: str


def parse_prompt_set(text: str) -> PromptSet:
    """'NAME=QUERY_PROMPT|DOCUMENT_PROMPT' (either prompt may be empty), e.g. 'e5=query: |passage: '."""
    name, eq, prompts = text.partition("=")
    query, bar, document = prompts.partition("|")
    if not eq or not bar or not name.strip() or not name.strip().isidentifier():
        raise OptionError(
            f"{{prompts}} '{literal(text)}' is not NAME=QUERY_PROMPT|DOCUMENT_PROMPT (a name of letters, digits and "
            "_), e.g. 'e5=query: |passage: '",
            "prompts",
        )
    return PromptSet(name.strip(), query, document)


@dataclass(frozen=True)
class Candidate:
    """One representation choice. `mix` is 'L<k>' for a single layer or a named mix."""

    pooler: str
    mix: str
    mixer: str
    layers: tuple[int, ...]
    post: str | None = None  # post-processing steps fitted on the training texts (e.g. 'whiten')
    prompts: PromptSet | None = None  # retrieval: what goes before queries and documents
    long_text: str | None = None  # retrieval: how long documents were read (a --long-text strategy, or a label)
    tokens: TokenReading | None = None  # retrieval: no pooling, every token kept and scored by MaxSim (`of_tokens`)

    @classmethod
    def of_tokens(cls, reading: TokenReading) -> Candidate:
        """A late-interaction candidate: pooler 'tokens' at the reading's one layer."""
        return cls(TOKENS, f"L{reading.layer}", "single", (reading.layer,), tokens=reading)

    @property
    def name(self) -> str:
        if self.tokens is not None:
            return self.tokens.name
        return (
            f"{self.pooler}/{self.mix}"
            + (f"+{self.post}" if self.post else "")
            + (f"@{self.prompts.name}" if self.prompts else "")
            + (f"~{self.long_text}" if self.long_text else "")
        )

    def width(self, hidden_size: int) -> int:
        """Feature width from the bank (before pair features); a token's width for a late-interaction candidate."""
        if self.tokens is not None and self.tokens.reduction:
            return TOKEN_DIM
        return hidden_size * output_blocks(self.mixer, self.layers)

    @property
    def single_layer(self) -> int | None:
        plain = not (self.post or self.prompts or self.long_text) and (self.tokens is None or self.tokens.plain)
        return self.layers[0] if self.mixer == "single" and plain else None

    def recipe(self, base: Recipe, mix_weights: tuple[float, ...] | None = None) -> Recipe:
        if self.tokens is not None:  # a multi-vector recipe; its projection file is written beside the recipe
            reading = self.tokens
            return base.replace(
                pooler=TOKENS,
                mixer="single",
                layers=self.layers,
                mix_weights=None,
                include_special=not reading.drop_special,
                drop_punctuation=reading.drop_punctuation,
                query_augment=reading.augment,
                token_projection=TOKEN_PROJECTION_FILE if reading.reduction else None,
                long_text=None,
                postprocess=None,
                query_prompt=None,  # the late-interaction rows read texts without prompts
                document_prompt=None,
                dimension_loss=None,
            )
        if self.long_text:  # a reading the recipe can apply (the sweep recommends no other)
            base = base.replace(long_text=self.long_text)
        return base.replace(
            pooler=self.pooler,
            mixer=self.mixer,
            layers=self.layers,
            mix_weights=mix_weights,
            postprocess=POSTPROCESS_FILE if self.post else None,
            query_prompt=self.prompts.query if self.prompts else None,
            document_prompt=self.prompts.document if self.prompts else None,
        )


def enumerate_candidates(
    num_layers: int, poolers: tuple[str, ...], layers: tuple[int, ...] | None = None
) -> list[Candidate]:
    """Single layers (all, or `layers`), the named mixes, concat of the last 4, and ScalarMix."""
    singles = resolve_layers(layers, num_layers) if layers else tuple(range(num_layers + 1))
    last = tuple(range(max(num_layers - 3, 0), num_layers + 1))[-4:]
    out = []
    for pooler in poolers:
        out += [Candidate(pooler, f"L{k}", "single", (k,)) for k in singles]
        for name, (mixer, mix_layers) in named_mixes(num_layers).items():
            out.append(Candidate(pooler, name, mixer, resolve_layers(mix_layers, num_layers) if mix_layers else ()))
        out.append(Candidate(pooler, f"concat_last{len(last)}", "concat", last))
        if pooler in LINEAR_POOLERS:
            out.append(Candidate(pooler, "scalar_mix", "scalar_mix", tuple(range(num_layers + 1))))
    return out


def candidate_features(
    bank: Bank,
    candidate: Candidate,
    rows: np.ndarray | None = None,
    mix_weights: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """[n, D] float32 features of one candidate for the given bank rows (ScalarMix needs its weights): a new
    array, or written into `out` (a caller stacking candidates avoids a copy of each: at 100k rows the screen's
    features were read through three [n, D] temporaries, 24 s of a 107 s screen, issue #75)."""
    if candidate.mixer == "scalar_mix":
        if mix_weights is None:
            raise ValueError(f"{candidate.name} needs its learned mix weights")
        return bank.mixed(candidate.pooler, candidate.layers, mix_weights, rows, out)
    if candidate.mixer == "single":
        return bank.layer(candidate.pooler, candidate.layers[0], rows, out)
    if candidate.mixer == "concat":
        if out is None:
            return np.concatenate([bank.layer(candidate.pooler, k, rows) for k in candidate.layers], axis=1)
        width = bank.width
        for j, k in enumerate(candidate.layers):
            bank.layer(candidate.pooler, k, rows, out[:, j * width : (j + 1) * width])
        return out
    if candidate.pooler not in LINEAR_POOLERS:
        return bank.pooled_mix(candidate.pooler, candidate.mix, rows, out)
    layers = mixed_layers(candidate.mixer, candidate.layers, bank.num_layers)
    if out is None:
        total = sum(bank.layer(candidate.pooler, k, rows) for k in layers)  # [n, H]
        return total if candidate.mixer == "sum" else total / len(layers)
    out.fill(0)  # then the same float32 additions, in the same order, as sum() above: equal to the bit
    for k in layers:
        out += bank.layer(candidate.pooler, k, rows)
    if candidate.mixer != "sum":
        out /= len(layers)
    return out
