"""A whole recipe as one ONNX graph: token ids -> the final vector, with nothing left to run in PyTorch.

The graph holds the encoder, the layer mix (with its fitted ScalarMix weights), the pooler (masked as
in bertlens: padding out, special tokens out when the recipe says so, computed from the ids inside
the graph), a linear post-processing step (whitening, all-but-the-top and a distilled projection are
all affine maps, folded into one matrix and offset) and normalisation. Batch and sequence axes are
dynamic. sentence-transformers' ONNX export stops after the transformer; this one does not.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bertlens.encoding.cls_attention import cls_rows
from bertlens.encoding.encoder import Encoder, LayerStates
from bertlens.errors import BertlensError
from bertlens.models import model_family
from bertlens.representation.apply import Representation
from bertlens.representation.postprocess import PostProcessor
from bertlens.representation.recipe import Recipe

INPUTS = ("input_ids", "attention_mask")
OUTPUT = "recipe_vector"
# opset 23 has Attention and Gelu: torch.onnx writes scaled_dot_product_attention as one Attention node, which
# ONNX Runtime runs fused (1.38x faster int8 than opset 18's transposes, masked softmax and NaN guards).
OPSET = 23


def affine_parts(postprocessor: PostProcessor) -> tuple[np.ndarray, np.ndarray, bool]:
    """A post-processor as x -> x A + c, then optionally x / ||x||: (A [D, D'], c [D'], final normalise).

    Every step but normalize is affine (centre, whiten, all-but-the-top, a learned linear map), so their
    chain folds into one matrix and offset (in float64); a normalize step is only allowed last.
    """
    steps = postprocessor.steps
    final_normalize = bool(steps) and steps[-1].kind == "normalize"
    dim = postprocessor.dim
    matrix, offset = np.eye(dim), np.zeros(dim)
    for i, step in enumerate(steps[: len(steps) - final_normalize]):
        mean = postprocessor.arrays.get(f"{i}.mean")
        if mean is not None:
            offset = offset - mean
        if step.kind == "whiten":
            transform = postprocessor.arrays[f"{i}.transform"]
            matrix, offset = matrix @ transform, offset @ transform
        elif step.kind == "abtt":
            directions = postprocessor.arrays[f"{i}.directions"]
            keep = np.eye(directions.shape[0]) - directions @ directions.T
            matrix, offset = matrix @ keep, offset @ keep
        elif step.kind == "linear":
            weight, bias = postprocessor.arrays[f"{i}.weight"], postprocessor.arrays[f"{i}.bias"]
            matrix, offset = matrix @ weight, offset @ weight + bias
        elif step.kind == "normalize":
            raise BertlensError(
                f"post-processing '{postprocessor.name}' normalises before its last step; ONNX export folds the "
                "steps into one linear map, which a normalisation in the middle breaks"
            )
    return matrix, offset, final_normalize


class RecipeGraph(nn.Module):
    """forward(input_ids [B, T], attention_mask [B, T]) -> [B, D]: what `Embedder(recipe).encode` computes."""

    def __init__(self, encoder: Encoder, recipe: Recipe, postprocessor: PostProcessor | None):
        super().__init__()
        if recipe.long_text_strategy is not None and recipe.long_text not in ("head",):
            raise BertlensError(
                f"long_text '{recipe.long_text}' runs several passes per text; one ONNX graph runs one pass. Serve it "
                "with the PyTorch backend, or `bertlens distill` it into a single-pass student"
            )
        self.model = encoder.model
        self.representation = Representation(recipe).eval()
        self.needs_attention = recipe.needs_attentions
        tok = encoder.tokenizer
        # the tokens the tokenizer adds around a text ([CLS]/[SEP], <s>/</s>), as its special_tokens_mask marks them
        special = sorted(
            {i for i in (tok.cls_token_id, tok.sep_token_id, tok.bos_token_id, tok.eos_token_id) if i is not None}
        )
        self.register_buffer("special_ids", torch.tensor(special, dtype=torch.long))
        self.normalize_last = False
        self.affine = None
        if postprocessor is not None:
            matrix, offset, self.normalize_last = affine_parts(postprocessor)
            self.affine = nn.Linear(matrix.shape[0], matrix.shape[1])
            with torch.no_grad():
                self.affine.weight.copy_(torch.from_numpy(matrix.T).float())
                self.affine.bias.copy_(torch.from_numpy(offset).float())

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            output_hidden_states=True,
            output_attentions=self.needs_attention,
        )
        hidden = torch.stack(out.hidden_states)  # [L+1, B, T, H]
        special = (input_ids.unsqueeze(-1) == self.special_ids).any(-1)  # [B, T]
        cls_attention = None
        if self.needs_attention:
            cls_attention = cls_rows(out.attentions)  # [L, B, T]
        states = LayerStates(
            hidden=hidden,
            attention_mask=attention_mask.bool(),
            special_tokens_mask=special,
            doc_index=torch.zeros(input_ids.shape[0], dtype=torch.long),
            cls_attention=cls_attention,
        )
        vectors = self.representation(states)  # [B, H']
        if self.affine is not None:
            vectors = self.affine(vectors)  # [B, D]
            if self.normalize_last:
                vectors = torch.nn.functional.normalize(vectors, dim=-1)
        return vectors


def onnx_opset(encoder: Encoder) -> int:
    """The opset a model exports at: its family's (families.py), else OPSET."""
    family = model_family(encoder.ref)
    return family.onnx_opset if family is not None else OPSET


def recipe_graph(encoder: Encoder, recipe: Recipe) -> RecipeGraph:
    """The recipe's graph in PyTorch, in eval mode, with its post-processing loaded from the recipe's file."""
    postprocessor = PostProcessor.load(recipe.postprocess) if recipe.postprocess else None
    return RecipeGraph(encoder, recipe, postprocessor).eval()


def export_graph(encoder: Encoder, recipe: Recipe, postprocessor: PostProcessor | None, path: Path) -> Path:
    """Write the recipe's graph to `path` (ONNX at the family's opset, 23 by default; dynamic batch and length)."""
    return write_graph(RecipeGraph(encoder, recipe, postprocessor).eval(), encoder, path)


def write_graph(graph: RecipeGraph, encoder: Encoder, path: Path) -> Path:
    """Write a built (possibly modified, e.g. smoothed) recipe graph of `encoder` to `path`."""
    sample = encoder.tokenizer(
        ["a short example", "a somewhat longer example sentence"], padding=True, return_tensors="pt"
    )
    args = (sample["input_ids"], sample["attention_mask"])
    batch, length = torch.export.Dim("batch"), torch.export.Dim("sequence")
    with torch.no_grad(), warnings.catch_warnings():
        # torch's exporter warns about its own internals (deprecated treespec checks, axis names): nothing a user
        # of bertlens can act on, so they are not passed on as "bertlens export: warning:" lines
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", message=".*axis name.*")
        torch.onnx.export(
            graph,
            args,
            str(path),
            input_names=list(INPUTS),
            output_names=[OUTPUT],
            opset_version=onnx_opset(encoder),
            dynamo=True,
            dynamic_shapes=({0: batch, 1: length}, {0: batch, 1: length}),
            external_data=False,
            verbose=False,
        )
    return path
