"""`bertlens export --format sentence-transformers`: the recipe as a directory `SentenceTransformer(path)` loads
with no bertlens code, built from sentence-transformers' own modules and checked with it before publishing.

What maps: Transformer (hidden states on when a layer other than the last is read) -> WeightedLayerPooling
(one layer, a mean or sum of layers, first_last, or a ScalarMix: weights softmax(w), times gamma) ->
Pooling (cls, mean, max; special tokens included) -> Normalize (recipe.normalize) -> Dense (a linear
post-processing: whitening, all-but-the-top or a distilled projection, folded into one affine map) ->
Normalize (a post-processing that ends by normalising); the recipe's query and document prompts become the
model's `prompts` (encode with prompt_name="query" / "document"). What does not map (concatenated layers, the
attention pooler, pooling without special tokens, a ScalarMix with layer norm, long-text windows) stops
with the part named and `bertlens distill` suggested: a distilled student is always expressible.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.onnx_graph import affine_parts
from bertlens.embedding.prompted import with_role
from bertlens.errors import BertlensError
from bertlens.extras import require
from bertlens.io.atomic import write_json
from bertlens.models import resolve_model
from bertlens.representation.mixers import mixed_layers, softmax
from bertlens.representation.postprocess import PostProcessor
from bertlens.representation.recipe import ROLES, Recipe

MAX_ABS_DIFF = 1e-5
# bertlens pooler -> sentence-transformers' Pooling mode. A new bertlens pooler that sentence-transformers also has
# gets its entry here; one it lacks is refused (with the distil advice) until it does.
ST_POOLERS = {"cls": "cls", "mean": "mean", "max": "max"}
RECORD_FILE = "bertlens-export.json"


@dataclass(frozen=True)
class LayerWeights:
    """WeightedLayerPooling's settings: start layer and one weight per layer from there to the top; `scale`
    multiplies the pooled vector (sum of layers, a ScalarMix's gamma), applied by a Dense layer."""

    start: int
    weights: tuple[float, ...]
    scale: float


def not_expressible(part: str) -> BertlensError:
    return BertlensError(
        f"sentence-transformers cannot express {part}; distil the recipe into a plain student with `bertlens distill "
        "--teacher RECIPE.json --student layers:K --texts ...` and export that"
    )


def layer_weights(recipe: Recipe, num_layers: int) -> LayerWeights | None:
    """None when the recipe reads the last layer alone (the Transformer's own output is enough)."""
    if recipe.mixer == "concat":
        raise not_expressible("a concatenation of layers (mixer 'concat')")
    if recipe.mixer == "scalar_mix" and recipe.mix_layer_norm:
        raise not_expressible("a ScalarMix with layer normalisation")
    picked = mixed_layers(recipe.mixer, recipe.layers, num_layers)
    if picked == (num_layers,):
        return None
    start = min(picked)
    weights = np.zeros(num_layers + 1 - start)
    scale = 1.0
    if recipe.mixer == "scalar_mix":
        probs = softmax(recipe.mix_weights if recipe.mix_weights is not None else [0.0] * len(picked))
        for layer, p in zip(picked, probs, strict=True):
            weights[layer - start] += p
        scale = recipe.mix_gamma
    else:
        for layer in picked:
            weights[layer - start] += 1.0
        if recipe.mixer == "sum":
            scale = float(len(picked))
    return LayerWeights(start, tuple(float(w) for w in weights), scale)


def check_expressible(recipe: Recipe) -> None:
    if recipe.pooler not in ST_POOLERS:
        raise not_expressible(
            f"the '{recipe.pooler}' pooler (sentence-transformers' Pooling has {', '.join(ST_POOLERS.values())}; "
            "a pooler it gains goes into experiments/export_st.py: ST_POOLERS)"
        )
    if not recipe.include_special and recipe.pooler != "cls":
        raise not_expressible("pooling without [CLS]/[SEP] (include_special false)")
    if recipe.long_text_strategy is not None and recipe.long_text != "head":
        raise not_expressible(f"long_text '{recipe.long_text}' (several passes per text)")


ST_OLDEST = (5, 7)  # sentence_transformer.modules with Transformer(config_kwargs=...): tested on 5.7 and 6.x


def check_sentence_transformers_version() -> None:
    """The modules this export builds exist from sentence-transformers 5.7 on (the same names in 5.x and 6.x)."""
    from importlib.metadata import version

    found = version("sentence-transformers")
    numbers = tuple(int(part) for part in found.split(".")[:2] if part.isdigit())
    if numbers < ST_OLDEST:
        raise BertlensError(
            f"the sentence-transformers export needs sentence-transformers>=5.7 (found {found}): "
            "pip install 'bertlens[sentence-transformers]'"
        )


def _dense(matrix: np.ndarray, bias: np.ndarray | None):
    from sentence_transformers.sentence_transformer.modules import Dense

    weight = torch.from_numpy(np.ascontiguousarray(matrix.T)).float()  # [out, in]
    return Dense(
        matrix.shape[0],
        matrix.shape[1],
        bias=bias is not None,
        activation_function=torch.nn.Identity(),
        init_weight=weight,
        init_bias=torch.from_numpy(bias).float() if bias is not None else None,
    )


def build_modules(recipe: Recipe) -> list:
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer, WeightedLayerPooling

    check_expressible(recipe)
    ref = resolve_model(recipe.model)
    mix = layer_weights(recipe, ref.num_layers)
    transformer = Transformer(
        str(ref.path),
        max_seq_length=recipe.max_length or None,
        config_kwargs={"output_hidden_states": True} if mix is not None else None,
    )
    width = transformer.get_embedding_dimension()
    modules = [transformer]
    if mix is not None:
        modules.append(
            WeightedLayerPooling(
                width,
                num_hidden_layers=ref.num_layers,
                layer_start=mix.start,
                layer_weights=torch.nn.Parameter(torch.tensor(mix.weights, dtype=torch.float32), requires_grad=False),
            )
        )
    modules.append(Pooling(width, pooling_mode=ST_POOLERS[recipe.pooler]))
    if mix is not None and mix.scale != 1.0:
        modules.append(_dense(np.eye(width) * mix.scale, None))
    if recipe.normalize:
        modules.append(Normalize())
    if recipe.postprocess:
        matrix, offset, final_normalize = affine_parts(PostProcessor.load(recipe.postprocess))
        modules.append(_dense(matrix, offset))
        if final_normalize:
            modules.append(Normalize())
    return modules


def run_export_sentence_transformers(recipe: Recipe, out: Path, texts: Sequence[str], texts_source: str) -> dict:
    """Build, save, load back with sentence-transformers, compare with bertlens fp32, then publish OUT."""
    require("sentence-transformers", "the sentence-transformers export (--format sentence-transformers)")
    check_sentence_transformers_version()
    from sentence_transformers import SentenceTransformer

    recipe = recipe.replace(precision="fp32")
    modules = build_modules(recipe)
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        prompts = {role: recipe.prompt(role) for role in ROLES if recipe.prompt(role)}
        SentenceTransformer(modules=modules, device="cpu", prompts=prompts or None).save(str(staging))
        loaded = SentenceTransformer(str(staging), device="cpu")
        embedder = Embedder(recipe)
        diff = 0.0
        for role in (None, *prompts):  # plain texts, then each role with its prompt (ST's prompt_name)
            got = loaded.encode(
                list(texts), batch_size=32, convert_to_numpy=True, show_progress_bar=False, prompt_name=role
            )
            diff = max(diff, float(np.abs(got - with_role(embedder, role).encode(texts)).max()))
        if diff >= MAX_ABS_DIFF:
            raise BertlensError(
                f"sentence-transformers' vectors differ from bertlens by up to {diff:.2e} (limit {MAX_ABS_DIFF}); "
                "nothing was written. Please report this recipe"
            )
        record = {
            "format": "sentence-transformers",
            "recipe": recipe.to_dict(),
            "modules": [type(m).__name__ for m in modules],
            "prompts": prompts,
            "parity": {"texts": len(texts), "texts_source": texts_source, "max_abs_diff": diff},
        }
        write_json(staging / RECORD_FILE, record)
        if out.exists():
            if not (out / RECORD_FILE).is_file():
                raise BertlensError(f"{out} exists and is not an earlier export; choose another --out")
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return record
