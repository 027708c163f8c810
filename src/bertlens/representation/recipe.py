"""Recipe: everything needed to reproduce one representation, as a frozen, validated dataclass.

The JSON form carries a schema version so that older files stay readable or fail clearly.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from bertlens.encoding.chunking import LongText, parse_long_text
from bertlens.errors import BertlensError, did_you_mean
from bertlens.io.atomic import write_text
from bertlens.representation.choices import (
    PRECISIONS,
    TOKENS,
    check_mixer,
    check_pooler,
    needs_cls_attention,
    output_blocks,
)

SCHEMA_VERSION = 1
ROLES = ("query", "document")
TOKEN_FIELDS = (
    "drop_punctuation",
    "query_augment",
    "token_projection",
    "first_stage",
    "rerank_depth",
)  # what only a multi-vector recipe reads
FIRST_STAGE_FIELDS = ("first_stage", "rerank_depth")  # left out of a multi-vector recipe that searches every document
RERANK_DEPTH = 100  # documents of the first stage MaxSim re-ranks, per query (the sweep's ranking depth)


@dataclass(frozen=True)
class Recipe:
    """Model + layers + mixer + pooler + post-processing + limits.

    layers: indices into the stack [embeddings, layer 1, ..., layer L]; negatives count from the top.
    mix_weights / mix_gamma / mix_layer_norm: a ScalarMix's learned state (pre-softmax weights).
    attention_layer: whose [CLS] attention weights the 'attention' pooler uses.
    max_length: None means the model's own limit.
    postprocess: path of a fitted post-processor (whitening, all-but-the-top, ...); in a saved
    recipe a relative path is relative to the recipe file.
    """

    model: str = "default"
    layers: tuple[int, ...] = (-1,)
    mixer: str = "single"
    pooler: str = "mean"
    include_special: bool = True
    attention_layer: int = -1
    normalize: bool = False
    max_length: int | None = None
    precision: str = "fp32"
    mix_weights: tuple[float, ...] | None = None
    mix_gamma: float = 1.0
    mix_layer_norm: bool = False
    postprocess: str | None = None  # a fitted PostProcessor (.safetensors), applied after pooling/normalize
    long_text: str | None = None  # None: truncate at max_length; else head, tail, head_tail[:H], windows[:STRIDE][:AGG]
    query_prompt: str | None = None  # put before a query's text (asymmetric models: E5's "query: ", BGE's instruction)
    document_prompt: str | None = None  # put before a document's text (E5's "passage: ")
    dimension_loss: tuple[tuple[int, float], ...] | None = None  # (width, measured score loss when the vectors are
    # cut to their first `width` dimensions and renormalised), written by the sweep; what the server's `dimensions` needs
    # pooler 'tokens' (a multi-vector recipe: late interaction, MaxSim) keeps every token's vector at its one layer;
    # include_special False drops the special tokens, and these say what else it does:
    drop_punctuation: bool = False  # documents' punctuation tokens dropped (ColBERT's document filter)
    query_augment: int = 0  # queries padded with the mask token to this many tokens (ColBERT's query augmentation)
    token_projection: str | None = None  # a fitted TokenProjection (.safetensors): token vectors reduced to its width
    # a pooled recipe of the same model whose top `rerank_depth` documents MaxSim re-ranks, per query (late
    # interaction as usually deployed: `index` keeps both vectors, `search` searches the pooled one first); None:
    # MaxSim over every document
    first_stage: Recipe | None = None
    rerank_depth: int = RERANK_DEPTH

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(int(x) for x in self.layers))
        if self.mix_weights is not None:
            object.__setattr__(self, "mix_weights", tuple(float(x) for x in self.mix_weights))
        if self.pooler != TOKENS:
            check_pooler(self.pooler)
        check_mixer(self.mixer)
        self._check_tokens()
        if self.precision not in PRECISIONS:
            raise BertlensError(f"unknown precision '{self.precision}': {did_you_mean(self.precision, PRECISIONS)}")
        if self.mixer != "first_last" and not self.layers:
            raise BertlensError(f"mixer '{self.mixer}' needs at least one layer in 'layers'")
        if self.mixer == "single" and len(self.layers) != 1:
            raise BertlensError(
                f"mixer 'single' takes exactly one layer, got {list(self.layers)}; use 'mean', 'sum' or 'concat'"
            )
        if self.mixer == "scalar_mix" and self.mix_weights is not None and len(self.mix_weights) != len(self.layers):
            raise BertlensError(
                f"scalar_mix has {len(self.mix_weights)} weights for {len(self.layers)} layers; give one per layer"
            )
        if self.mix_weights is not None and not all(math.isfinite(x) for x in self.mix_weights):
            raise BertlensError("mix_weights must be finite numbers")
        if self.long_text is not None:
            _ = self.long_text_strategy  # parsed (and checked) here, not at encode time
        if self.dimension_loss is not None:
            pairs = tuple((int(w), float(loss)) for w, loss in self.dimension_loss)
            if any(w < 1 or not math.isfinite(loss) for w, loss in pairs):
                raise BertlensError("dimension_loss: widths must be positive and losses finite numbers")
            object.__setattr__(self, "dimension_loss", tuple(sorted(pairs)))
        if self.max_length is not None and not 2 <= self.max_length <= 100_000:
            raise BertlensError(f"max_length {self.max_length} must be between 2 and the model's limit")

    @property
    def multi_vector(self) -> bool:
        """Whether the recipe keeps every token's vector (pooler 'tokens'): a text is a matrix, scored by MaxSim."""
        return self.pooler == TOKENS

    @property
    def tokens_differ_by_role(self) -> bool:
        """A multi-vector recipe that keeps other tokens of a query than of a document (query augmentation, the
        documents' punctuation filter): a text's role must be known to read it."""
        return self.multi_vector and bool(self.query_augment or self.drop_punctuation)

    def _check_tokens(self) -> None:
        """What a multi-vector recipe can hold, and the settings only it reads."""
        if not self.multi_vector:
            for name, given in (
                ("drop_punctuation", self.drop_punctuation),
                ("query_augment", self.query_augment),
                ("token_projection", self.token_projection),
                ("first_stage", self.first_stage),
                ("rerank_depth", self.rerank_depth != RERANK_DEPTH),
            ):
                if given:
                    raise BertlensError(
                        f"'{name}' applies to a multi-vector recipe (pooler 'tokens'), not '{self.pooler}'"
                    )
            return
        if self.mixer != "single":
            raise BertlensError(f"pooler 'tokens' reads one layer (mixer 'single'), not mixer '{self.mixer}'")
        if self.postprocess or self.long_text:
            raise BertlensError(
                "pooler 'tokens' keeps token vectors as they are: a post-processor or a long_text reading is fitted "
                "on pooled vectors; leave postprocess and long_text empty"
            )
        if not 0 <= self.query_augment <= 512:
            raise BertlensError(f"query_augment {self.query_augment} must be between 0 (off) and 512 tokens")
        if self.first_stage is not None:
            self._check_first_stage(self.first_stage)
        elif self.rerank_depth != RERANK_DEPTH:
            raise BertlensError(
                "'rerank_depth' says how many first-stage documents MaxSim re-ranks: give a first_stage"
            )

    def _check_first_stage(self, first: Recipe) -> None:
        """A first stage is a pooled reading the same encoder gives (one model loaded, one precision)."""
        if first.multi_vector:
            raise BertlensError("first_stage must be a pooled recipe (one vector per text), not pooler 'tokens'")
        if first.model != self.model or first.max_length != self.max_length:
            raise BertlensError(
                f"first_stage reads with model '{first.model}' (max_length {first.max_length}) and the tokens with "
                f"'{self.model}' (max_length {self.max_length}): give both the same model and max_length"
            )
        if first.long_text_strategy is not None and first.long_text_strategy.per_piece:
            raise BertlensError(
                f"first_stage long_text '{first.long_text}' keeps a vector per chunk; a first stage ranks documents: "
                "give it a reading of one vector per document"
            )
        if not 1 <= self.rerank_depth <= 10_000:
            raise BertlensError(f"rerank_depth {self.rerank_depth} must be between 1 and 10000 documents")
        if first.precision != self.precision:  # one encoder reads both: the tokens' precision is what runs
            object.__setattr__(self, "first_stage", first.replace(precision=self.precision))

    def prompt(self, role: str | None) -> str:
        """What goes before a text of this role ('query' or 'document'); none without a role."""
        if role is None:
            return ""
        if role not in ROLES:
            raise BertlensError(f"unknown role '{role}': {did_you_mean(role, ROLES)}")
        return (self.query_prompt if role == "query" else self.document_prompt) or ""

    @property
    def needs_attentions(self) -> bool:
        if self.multi_vector:  # the tokens need none; a first stage that pools by attention does
            return self.first_stage is not None and self.first_stage.needs_attentions
        return needs_cls_attention((self.pooler,))

    @functools.cached_property
    def long_text_strategy(self) -> LongText | None:
        """`long_text` parsed once (None: plain truncation at max_length)."""
        return parse_long_text(self.long_text) if self.long_text is not None else None

    @property
    def width_multiplier(self) -> int:
        """How many hidden-size blocks the pooled vector has: one per layer for concat, else one."""
        return output_blocks(self.mixer, self.layers)

    def output_width(self, hidden_size: int) -> int:
        """Width of the pooled vector before post-processing."""
        return hidden_size * self.width_multiplier

    def replace(self, **changes) -> Recipe:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["layers"] = list(self.layers)
        data["mix_weights"] = None if self.mix_weights is None else list(self.mix_weights)
        data["dimension_loss"] = None if self.dimension_loss is None else {str(w): v for w, v in self.dimension_loss}
        if not self.multi_vector:  # a pooled recipe reads (and fingerprints) as it did before multi-vector recipes
            for name in TOKEN_FIELDS:
                del data[name]
        elif self.first_stage is None:  # as multi-vector recipes read before first stages
            for name in FIRST_STAGE_FIELDS:
                del data[name]
        else:
            data["first_stage"] = {k: v for k, v in self.first_stage.to_dict().items() if k != "schema_version"}
        return {"schema_version": SCHEMA_VERSION, **data}

    def loss_at(self, width: int) -> float | None:
        """The measured loss at this width, or None when it was never measured."""
        return dict(self.dimension_loss or ()).get(width)

    @classmethod
    def from_dict(cls, data: dict, where: str = "recipe") -> Recipe:
        data = dict(data)
        version = data.pop("schema_version", None)
        if version != SCHEMA_VERSION:
            raise BertlensError(
                f"{where}: schema_version {version!r} is not supported (this bertlens reads {SCHEMA_VERSION})"
            )
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise BertlensError(f"{where}: unknown field '{unknown[0]}': {did_you_mean(unknown[0], sorted(known))}")
        for name, value in data.items():
            _check_type(name, value, where)
        if data.get("dimension_loss") is not None:
            data["dimension_loss"] = tuple((int(w), v) for w, v in data["dimension_loss"].items())
        if data.get("first_stage") is not None:
            data["first_stage"] = cls.from_dict(
                {"schema_version": SCHEMA_VERSION, **data["first_stage"]}, f"{where}: first_stage"
            )
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str = "recipe") -> Recipe:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BertlensError(f"{where}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
        if not isinstance(data, dict):
            raise BertlensError(f"{where}: expected a JSON object")
        return cls.from_dict(data, where)

    def save(self, path: str | os.PathLike) -> Path:
        """Write atomically (temporary file, then rename). A model given as a relative directory is stored as its
        absolute path, so the recipe works from any directory (a hub id or 'default' is kept as it is)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        model = Path(self.model).expanduser()
        portable = self
        if not model.is_absolute() and model.is_dir():
            first = self.first_stage and self.first_stage.replace(model=str(model.resolve()))
            portable = self.replace(model=str(model.resolve()), first_stage=first)
        write_text(path, portable.to_json())
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> Recipe:
        path = Path(path)
        if not path.is_file():
            raise BertlensError(f"recipe file {path} does not exist")
        return cls.from_json(path.read_text(encoding="utf-8"), where=str(path)).files_under(path.parent)

    def files_under(self, folder: Path) -> Recipe:
        """The recipe with its fitted files (post-processor, token projection, its first stage's) named relative
        to `folder` made absolute."""

        def under(name: str | None) -> str | None:
            return str((folder / name).resolve()) if name and not Path(name).is_absolute() else name

        first = self.first_stage and self.first_stage.files_under(folder)
        return self.replace(
            postprocess=under(self.postprocess), token_projection=under(self.token_projection), first_stage=first
        )


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) and math.isfinite(value)


# field -> (check, what the field must be): JSON types, checked before any value is used
_FIELD_TYPES = {
    "model": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "layers": (
        lambda v: isinstance(v, list) and all(_is_int(x) for x in v),
        "a list of integers, e.g. [-1] or [-4, -3, -2, -1]",
    ),
    "mixer": (lambda v: isinstance(v, str), "a string"),
    "pooler": (lambda v: isinstance(v, str), "a string"),
    "include_special": (lambda v: isinstance(v, bool), "true or false"),
    "attention_layer": (_is_int, "an integer"),
    "normalize": (lambda v: isinstance(v, bool), "true or false"),
    "max_length": (lambda v: v is None or _is_int(v), "an integer or null"),
    "precision": (lambda v: isinstance(v, str), "a string"),
    "mix_weights": (
        lambda v: v is None or (isinstance(v, list) and all(_is_number(x) for x in v)),
        "a list of finite numbers or null",
    ),
    "mix_gamma": (_is_number, "a finite number"),
    "mix_layer_norm": (lambda v: isinstance(v, bool), "true or false"),
    "postprocess": (lambda v: v is None or isinstance(v, str), "a file name or null"),
    "long_text": (lambda v: v is None or isinstance(v, str), 'a strategy name such as "windows:mean" or null'),
    "query_prompt": (lambda v: v is None or isinstance(v, str), 'a string such as "query: " or null'),
    "document_prompt": (lambda v: v is None or isinstance(v, str), 'a string such as "passage: " or null'),
    "drop_punctuation": (lambda v: isinstance(v, bool), "true or false"),
    "query_augment": (_is_int, "an integer (0: off)"),
    "token_projection": (lambda v: v is None or isinstance(v, str), "a file name or null"),
    "first_stage": (lambda v: v is None or isinstance(v, dict), "a pooled recipe (a JSON object) or null"),
    "rerank_depth": (_is_int, "an integer (documents per query)"),
    "dimension_loss": (
        lambda v: (
            v is None
            or (isinstance(v, dict) and all(k.isdigit() and int(k) > 0 and _is_number(x) for k, x in v.items()))
        ),
        'an object of width -> measured loss, e.g. {"128": 0.004}, or null',
    ),
}


def _check_type(name: str, value, where: str) -> None:
    check, expected = _FIELD_TYPES[name]
    if not check(value):
        raise BertlensError(f"{where}: field '{name}' must be {expected}, got {json.dumps(value)}")
