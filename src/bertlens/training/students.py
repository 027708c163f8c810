"""Smaller models to train: a subset of a teacher's layers, or a BERT of a named size built from scratch.

Layer subsets follow sentence-transformers' layer-reduction recipe (keep some of the teacher's layers,
initialised from them; Reimers & Gurevych 2020) and DistilBERT (Sanh et al. 2019: every other layer
of the teacher). A student from a config starts random, with the teacher's tokenizer, and takes the
teacher's input embeddings where it can: copied when the widths match, else projected onto their
top principal directions (so the student starts from the teacher's word geometry, not noise).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bertlens.errors import OptionError, literal
from bertlens.families import require_family, submodule
from bertlens.training.config import STUDENT_FORMS

# Named sizes for training from scratch (BERT architecture): layers x width, heads, feed-forward width
SIZES = {
    "tiny": {"num_hidden_layers": 6, "hidden_size": 128, "num_attention_heads": 4, "intermediate_size": 512},
    "mini": {"num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 1024},
    "small": {"num_hidden_layers": 6, "hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 1024},
    "medium": {"num_hidden_layers": 8, "hidden_size": 512, "num_attention_heads": 8, "intermediate_size": 2048},
}


def scratch_config(spec: str, option: str = "scratch") -> dict:
    """A named size (tiny, mini, small, medium) or a JSON file of BertConfig fields (errors name `option`: pretrain's
    --scratch, or distill's --student config:...)."""
    if spec in SIZES:
        return dict(SIZES[spec])
    path = Path(spec)
    if not path.is_file():
        raise OptionError(f"{{{option}}} '{literal(spec)}' is neither a size ({', '.join(SIZES)}) nor a JSON file",
                          option)  # fmt: skip
    try:
        fields = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OptionError(
            f"{{{option}}} {literal(path)}: not valid JSON ({literal(exc)}); give BertConfig fields as a JSON object",
            option,
        ) from None
    if not isinstance(fields, dict):
        raise OptionError(f"{{{option}}} {literal(path)}: expected a JSON object of BertConfig fields", option)
    return fields


def _load_tokenizer(tokenizer_dir: Path):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(tokenizer_dir, use_fast=True)
    except (OSError, ValueError) as exc:
        raise OptionError(f"{{tokenizer}} {literal(tokenizer_dir)}: could not load a tokenizer ({literal(exc)})",
                          "tokenizer") from None  # fmt: skip


def _random_bert(spec: str, vocab_size: int, seed: int, max_length: int):
    from transformers import BertConfig, BertModel

    fields = {"max_position_embeddings": max(512, max_length), **scratch_config(spec), "vocab_size": vocab_size}
    try:
        config = BertConfig(**fields)
        torch.manual_seed(seed)
        return BertModel(config)
    except (TypeError, ValueError) as exc:
        raise OptionError(f"{{scratch}} {literal(spec)}: not a valid BERT configuration ({literal(exc)})",
                          "scratch") from None  # fmt: skip


def initialise_from_scratch(spec: str, tokenizer_dir: Path, target: Path, seed: int, max_length: int) -> Path:
    """A randomly initialised BERT (seeded) with the given tokenizer, written to `target` as a model directory."""
    tokenizer = _load_tokenizer(tokenizer_dir)
    model = _random_bert(spec, len(tokenizer), seed, max_length)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target, safe_serialization=True)
    tokenizer.save_pretrained(target)
    return target


@dataclass(frozen=True)
class StudentSpec:
    """keep: the teacher's transformer layers to keep (0-based), or None for a model built from `config`."""

    keep: tuple[int, ...] | None = None
    config: str | None = None

    @property
    def name(self) -> str:
        return f"layers:{','.join(map(str, self.keep))}" if self.keep is not None else f"config:{self.config}"


def spread_layers(count: int, total: int) -> tuple[int, ...]:
    """`count` of `total` layers spread evenly (halves round up), first and last included: 3 of 6 -> (0, 3, 5)."""
    return tuple(int(i) for i in np.unique(np.floor(np.linspace(0, total - 1, count) + 0.5).astype(int)))


def parse_student(spec: str, teacher_layers: int) -> StudentSpec:
    """'layers:0,2,4', 'layers:3' or 'config:mini' / 'config:FILE.json' -> StudentSpec (checked against the teacher)."""
    kind, _, arg = spec.partition(":")
    if kind == "config" and arg:
        scratch_config(arg, "student")  # fails now, not after the teacher has been encoded
        return StudentSpec(config=arg)
    if kind != "layers" or not arg:
        raise OptionError(f"{{student}} '{literal(spec)}': expected {literal(STUDENT_FORMS)}", "student")
    parts = [p.strip() for p in arg.split(",")]
    if not all(p.lstrip("-").isdigit() for p in parts):
        raise OptionError(f"{{student}} '{literal(spec)}': layer numbers must be integers ({literal(STUDENT_FORMS)})",
                          "student")  # fmt: skip
    numbers = [int(p) for p in parts]
    if len(numbers) == 1 and "," not in arg:
        count = numbers[0]
        if not 1 <= count <= teacher_layers:
            raise OptionError(
                f"{{student}} layers:{count}: the teacher has {teacher_layers} layers; choose 1..{teacher_layers}",
                "student",
            )
        return StudentSpec(keep=spread_layers(count, teacher_layers))
    if any(not 0 <= n < teacher_layers for n in numbers) or len(set(numbers)) != len(numbers):
        raise OptionError(
            f"{{student}} '{literal(spec)}': layers must be distinct numbers in 0..{teacher_layers - 1} (the teacher "
            f"has {teacher_layers} layers, counted from 0)",
            "student",
        )
    return StudentSpec(keep=tuple(sorted(numbers)))


def student_width(spec: StudentSpec, teacher_width: int) -> int:
    """The width of the student's vectors (before any projection), known before it is built."""
    if spec.keep is not None:
        return teacher_width
    from transformers import BertConfig

    return int(scratch_config(spec.config).get("hidden_size", BertConfig().hidden_size))


PER_LAYER_FIELDS = ("layer_types",)  # transformers' per-layer config (ModernBERT: sliding or full attention)


def _keep_layers(model: nn.Module, keep: tuple[int, ...]) -> str:
    """Cut the model down to the teacher layers `keep`, in place (weights, config, per-layer config lists);
    returns what was kept, for the record. ALBERT shares one group of weights across its layers, so its
    student runs that group len(keep) times (which teacher layers are named makes no difference)."""
    family = require_family(getattr(model.config, "model_type", None), type(model).__name__, "where its layers are")
    holder_path, _, name = family.layers.rpartition(".")
    holder = submodule(model, holder_path) if holder_path else model
    config = model.config
    if family.shared_layers:
        setattr(config, family.layer_count_key, len(keep))
        return f"{len(keep)} layers running the teacher's shared layer weights ({family.name} shares them)"
    layers = getattr(holder, name)
    count = len(layers)
    setattr(holder, name, nn.ModuleList([layers[i] for i in keep]))
    for field in PER_LAYER_FIELDS:  # per-layer settings follow their layers
        value = getattr(config, field, None)
        if isinstance(value, list) and len(value) == count:
            setattr(config, field, [value[i] for i in keep])
    setattr(config, family.layer_count_key, len(keep))
    return f"teacher layers {list(keep)} (of the teacher's stack, 0-based)"


def _embedding_init(student: nn.Module, teacher: nn.Module) -> str:
    """Give the student the teacher's word, position and token-type embeddings: copied when the widths match,
    else mapped by one linear projection onto the top principal axes of the teacher's word embeddings (one map
    for all three tables, so sums of embeddings map to sums), rescaled to the student's initial spread."""
    target, source = student.embeddings, teacher.embeddings
    words = teacher.get_input_embeddings().weight.detach().double()  # [V, E_teacher]: any family's word table
    width = target.word_embeddings.weight.shape[1]
    same = words.shape[1] == width
    if same:
        basis, scale = torch.eye(width, dtype=torch.float64), 1.0
    else:
        _, _, right = torch.linalg.svd(words - words.mean(0), full_matrices=False)  # right [H_teacher, H_teacher]
        basis = right[:width].T  # [H_teacher, width]
        scale = float(target.word_embeddings.weight.detach().std() / (words @ basis).std())
    copied = []
    for name in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        to = getattr(target, name, None)
        frm = teacher.get_input_embeddings() if name == "word_embeddings" else getattr(source, name, None)
        if to is None or frm is None or to.weight.shape[0] > frm.weight.shape[0]:
            continue  # the student has more positions or types than the teacher: those stay random
        with torch.no_grad():
            to.weight.copy_((frm.weight.detach()[: to.weight.shape[0]].double() @ basis * scale).float())
        copied.append(name.split("_")[0])
    how = "copied" if same else "PCA-projected"
    return f"{', '.join(copied)} embeddings from the teacher ({how})"


def build_student(
    spec: StudentSpec, teacher_dir: Path, target: Path, seed: int, max_length: int, trust_remote_code: bool = False
) -> str:
    """Write the student as a model directory at `target`; returns how it was initialised (for the record)."""
    from transformers import AutoModel

    teacher = AutoModel.from_pretrained(teacher_dir, use_safetensors=True, trust_remote_code=trust_remote_code).float()
    tokenizer = _load_tokenizer(teacher_dir)
    if spec.keep is not None:
        student, note = teacher, _keep_layers(teacher, spec.keep)
    else:
        student = _random_bert(spec.config, len(tokenizer), seed, max_length)
        note = f"random {spec.config} BERT (seed {seed}), " + _embedding_init(student, teacher)
    target.mkdir(parents=True, exist_ok=True)
    student.save_pretrained(target, safe_serialization=True)
    tokenizer.save_pretrained(target)
    return note
