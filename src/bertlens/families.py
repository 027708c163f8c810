"""What differs between encoder families, as data: one entry per architecture, read by every command.

Where a family keeps its transformer layers, what runs after them, which attention implementations it
has, where its masked-LM head lives in its `*ForMaskedLM` model, whether it takes token_type_ids, and
whether its layers share weights. Commands never branch on a model type; they ask this table. An
architecture that is not here still embeds and sweeps (through `AutoModel`, falling back from SDPA to
eager attention); what needs the table (fine-tuning blocks, layer students, the masked-LM head) says
in one line which family data is missing.
"""

from __future__ import annotations

from dataclasses import dataclass

from bertlens.errors import BertlensError


@dataclass(frozen=True)
class Family:
    name: str
    model_types: tuple[str, ...]  # config.json's model_type values
    layers: str  # dotted path, from the bare model, to its transformer layers (a ModuleList)
    mlm_head: tuple[str, ...]  # attributes of its *ForMaskedLM model mapping hidden states to logits, in order
    after_layers: tuple[str, ...] = ()  # modules applied after the last layer (trained with it)
    unused: tuple[str, ...] = ("pooler", "pooler_activation")  # modules no recipe reads: never trained
    sdpa: bool = True  # has attn_implementation="sdpa"; otherwise eager
    token_type_ids: bool = True  # its forward takes token_type_ids
    cls_attention: str | None = None  # path from a layer to its BERT-style self-attention: [CLS] rows from q/k hooks
    shared_layers: bool = False  # one group of layer weights run at every layer (ALBERT)
    layer_count_key: str = "num_hidden_layers"  # the config field holding the number of layers
    position_offset: int = 0  # positions reserved before the first token (RoBERTa's padding_idx + 1)
    onnx_opset: int = 23  # opset 23 writes attention as one Attention node (the fast path, docs/results-log.md)


FAMILIES: tuple[Family, ...] = (
    Family("BERT", ("bert",), "encoder.layer", ("cls",), cls_attention="attention.self"),
    Family(
        "RoBERTa",
        ("roberta", "xlm-roberta", "camembert"),
        "encoder.layer",
        ("lm_head",),
        cls_attention="attention.self",
        position_offset=2,
    ),
    Family(
        "DistilBERT",
        ("distilbert",),
        "transformer.layer",
        ("vocab_transform", "activation", "vocab_layer_norm", "vocab_projector"),
        token_type_ids=False,
        layer_count_key="n_layers",
    ),
    Family("ALBERT", ("albert",), "encoder.albert_layer_groups", ("predictions",), shared_layers=True),
    Family("DeBERTa-v2", ("deberta-v2", "deberta"), "encoder.layer", ("cls",), sdpa=False),
    Family(
        "ELECTRA",
        ("electra",),
        "encoder.layer",
        ("generator_predictions", "generator_lm_head"),
        cls_attention="attention.self",
    ),
    Family("MPNet", ("mpnet",), "encoder.layer", ("lm_head",), sdpa=False, token_type_ids=False),
    Family(
        "ModernBERT",
        ("modernbert",),
        "layers",
        ("head", "decoder"),
        after_layers=("final_norm",),
        token_type_ids=False,
        # ONNX Runtime's opset-23 RotaryEmbedding kernel rejects the cos/sin caches the exporter writes for
        # ModernBERT ("expected to have the same shape as input 'x'"); at opset 18 rotary is plain ops, same vectors
        onnx_opset=18,
    ),
)
BY_MODEL_TYPE = {model_type: family for family in FAMILIES for model_type in family.model_types}


def family_of(model_type: str | None) -> Family | None:
    """The family of a config's model_type, or None for an architecture the table does not know."""
    return BY_MODEL_TYPE.get(model_type or "")


def require_family(model_type: str | None, model: str, needed: str) -> Family:
    """The family, or one line saying that `needed` (what the command wanted) is unknown for this architecture."""
    family = family_of(model_type)
    if family is None:
        known = ", ".join(f.name for f in FAMILIES)
        raise BertlensError(
            f"model '{model}' is a '{model_type}', which bertlens' family table does not know, so {needed} is "
            f"unknown; embed and sweep work with any encoder, this needs one of: {known}"
        )
    return family


def submodule(root, path: str):
    """root.a.b for path 'a.b' (None when a step is missing)."""
    for name in path.split("."):
        root = getattr(root, name, None)
        if root is None:
            return None
    return root
