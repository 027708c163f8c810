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

A multi-vector recipe (pooler 'tokens', issue #52) becomes a `MultiVectorEncoder` (sentence-transformers 6):
Transformer (query expansion with the mask token, attended, when the recipe augments queries) -> WeightedLayerPooling
(its one layer) -> Dense (its token projection) -> MultiVectorMask (special tokens, both sides) -> MultiVectorMask
(punctuation, documents) -> Normalize (MaxSim over cosines), checked the same way on queries and documents.
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
from bertlens.encoding.token_states import punctuation_ids_of
from bertlens.errors import BertlensError
from bertlens.extras import require
from bertlens.io.atomic import write_json
from bertlens.models import resolve_model
from bertlens.representation.mixers import mixed_layers, softmax
from bertlens.representation.postprocess import PostProcessor
from bertlens.representation.recipe import ROLES, Recipe
from bertlens.representation.token_projection import TokenProjection

MAX_ABS_DIFF = 1e-5
# bertlens pooler -> sentence-transformers' Pooling mode. A new bertlens pooler that sentence-transformers also has
# gets its entry here; one it lacks is refused (with the distil advice) until it does.
ST_POOLERS = {"cls": "cls", "mean": "mean", "max": "max"}
RECORD_FILE = "bertlens-export.json"
TOKENS_KEY = "token_embeddings"  # what a MultiVectorEncoder's modules read and write


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


def _dense(matrix: np.ndarray, bias: np.ndarray | None, **names):
    """A Dense module x -> x @ matrix + bias (`names`: module_input_name="token_embeddings" for token vectors)."""
    from sentence_transformers.sentence_transformer.modules import Dense

    weight = torch.from_numpy(np.ascontiguousarray(matrix.T)).float()  # [out, in]
    return Dense(
        matrix.shape[0],
        matrix.shape[1],
        bias=bias is not None,
        activation_function=torch.nn.Identity(),
        init_weight=weight,
        init_bias=torch.from_numpy(bias).float() if bias is not None else None,
        **names,
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


def build_multi_vector_modules(recipe: Recipe) -> list:
    """A multi-vector recipe as sentence-transformers 6 modules (MultiVectorEncoder)."""
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.multi_vector_encoder.modules import MultiVectorMask
    from sentence_transformers.sentence_transformer.modules import Normalize, WeightedLayerPooling

    ref = resolve_model(recipe.model)
    mix = layer_weights(recipe, ref.num_layers)
    expansion = {"strategy": "min", "attend": True, "length": recipe.query_augment} if recipe.query_augment else None
    transformer = Transformer(
        str(ref.path),
        max_seq_length=recipe.max_length or None,
        config_kwargs={"output_hidden_states": True} if mix is not None else None,
        query_expansion=expansion,
    )
    width = transformer.get_embedding_dimension()
    modules = [transformer]
    if mix is not None:
        weights = torch.nn.Parameter(torch.tensor(mix.weights, dtype=torch.float32), requires_grad=False)
        modules.append(WeightedLayerPooling(width, ref.num_layers, layer_start=mix.start, layer_weights=weights))
    if recipe.token_projection:
        projection = TokenProjection.load(recipe.token_projection)
        bias = -projection.mean @ projection.components  # (x - m) W = x W - m W
        modules.append(_dense(projection.components, bias, module_input_name=TOKENS_KEY))
    tokenizer = transformer.tokenizer
    if not recipe.include_special:
        specials = [t for t in tokenizer.all_special_tokens if t != tokenizer.mask_token]
        modules.append(MultiVectorMask(skiplist_words=specials, skiplist_tasks=["query", "document"]))
    if recipe.drop_punctuation:
        ids = np.flatnonzero(punctuation_ids_of(tokenizer))
        modules.append(MultiVectorMask(skiplist_words=tokenizer.convert_ids_to_tokens(ids.tolist())))
    modules.append(Normalize(module_input_name=TOKENS_KEY))  # unit token vectors: MaxSim over cosines
    return modules


def _multi_vector_diff(staging: Path, recipe: Recipe, texts: Sequence[str]) -> float:
    """Largest difference between sentence-transformers' unit token vectors and bertlens', queries and documents."""
    from sentence_transformers import MultiVectorEncoder

    loaded = MultiVectorEncoder(str(staging), device="cpu")
    embedder = Embedder(recipe)
    diff = 0.0
    for role, encode in (("query", loaded.encode_query), ("document", loaded.encode_document)):
        got = encode(list(texts), batch_size=32, convert_to_numpy=True, show_progress_bar=False)
        ours = with_role(embedder, role).embed_tokens(list(texts))
        for i, vectors in enumerate(got):
            mine = ours.of(i) / np.maximum(np.linalg.norm(ours.of(i), axis=1, keepdims=True), 1e-12)
            if np.shape(vectors) != mine.shape:
                raise BertlensError(
                    f"sentence-transformers keeps {len(vectors)} tokens of {role} {i + 1} where bertlens keeps "
                    f"{len(mine)}; nothing was written. Please report this recipe"
                )
            diff = max(diff, float(np.abs(np.asarray(vectors) - mine).max()))
    return diff


def _pooled_diff(staging: Path, recipe: Recipe, texts: Sequence[str], prompts: dict) -> float:
    from sentence_transformers import SentenceTransformer

    loaded = SentenceTransformer(str(staging), device="cpu")
    embedder = Embedder(recipe)
    diff = 0.0
    for role in (None, *prompts):  # plain texts, then each role with its prompt (ST's prompt_name)
        got = loaded.encode(
            list(texts), batch_size=32, convert_to_numpy=True, show_progress_bar=False, prompt_name=role
        )
        diff = max(diff, float(np.abs(got - with_role(embedder, role).encode(texts)).max()))
    return diff


def check_multi_vector_version() -> None:
    """MultiVectorEncoder came with sentence-transformers 6."""
    from importlib.metadata import version

    found = version("sentence-transformers")
    if int(found.split(".")[0]) < 6:
        raise BertlensError(
            f"a multi-vector recipe exports to sentence-transformers' MultiVectorEncoder, new in 6.0 (found {found}): "
            "pip install 'sentence-transformers>=6'"
        )


def run_export_sentence_transformers(recipe: Recipe, out: Path, texts: Sequence[str], texts_source: str) -> dict:
    """Build, save, load back with sentence-transformers, compare with bertlens fp32, then publish OUT."""
    require("sentence-transformers", "the sentence-transformers export (--format sentence-transformers)")
    check_sentence_transformers_version()
    from sentence_transformers import SentenceTransformer

    recipe = recipe.replace(precision="fp32")
    if recipe.multi_vector:
        check_multi_vector_version()
    modules = build_multi_vector_modules(recipe) if recipe.multi_vector else build_modules(recipe)
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        prompts = {role: recipe.prompt(role) for role in ROLES if recipe.prompt(role)}
        if recipe.multi_vector:
            from sentence_transformers import MultiVectorEncoder

            MultiVectorEncoder(modules=modules, device="cpu", prompts=prompts or None).save(str(staging))
            diff = _multi_vector_diff(staging, recipe, texts)
        else:
            SentenceTransformer(modules=modules, device="cpu", prompts=prompts or None).save(str(staging))
            diff = _pooled_diff(staging, recipe, texts, prompts)
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
        if recipe.first_stage is not None:  # a search pipeline, not a model: the export holds the token reading
            record["first_stage"] = (
                f"the recipe's first stage (pooler '{recipe.first_stage.pooler}', top {recipe.rerank_depth} re-ranked) "
                "is not part of the MultiVectorEncoder, which scores every document it is given; export the pooled "
                "recipe (the sweep's recipe.json) for it"
            )
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
