"""`RecipeVectorizer`: a recipe as a scikit-learn transformer (texts -> vectors), for Pipelines and grid searches.

Constructor arguments are recipe fields, stored unchanged (scikit-learn's `clone` and `set_params`
rebuild the estimator from them), so a `GridSearchCV` can search poolers and layers as well as the
classifier's C. Encodings are cached per (recipe, text) in the process: refitting the classifier
for every C and every fold re-encodes nothing. `fit` learns nothing (a fitted post-processing
belongs to the recipe's `postprocess` file, fitted with `bertlens postprocess` on its own texts).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from bertlens.embedding.embedder import Embedder
from bertlens.io.cache import content_key
from bertlens.representation.recipe import Recipe

CACHE_LIMIT = 200_000  # vectors kept per process (least recently used beyond that are dropped)
_VECTORS: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_EMBEDDERS: dict[str, Embedder] = {}


class RecipeVectorizer(TransformerMixin, BaseEstimator):
    """`RecipeVectorizer(model="default", layers=(-1,), pooler="mean").transform(texts)` -> [n, D] float32."""

    def __init__(
        self,
        model: str = "default",
        layers: Sequence[int] = (-1,),
        mixer: str = "single",
        pooler: str = "mean",
        normalize: bool = False,
        max_length: int | None = None,
        precision: str = "fp32",
        postprocess: str | None = None,
    ):
        self.model = model
        self.layers = layers
        self.mixer = mixer
        self.pooler = pooler
        self.normalize = normalize
        self.max_length = max_length
        self.precision = precision
        self.postprocess = postprocess

    def recipe(self) -> Recipe:
        layers = tuple(self.layers)
        mixer = "mean" if self.mixer == "single" and len(layers) > 1 else self.mixer
        return Recipe(
            model=self.model,
            layers=layers,
            mixer=mixer,
            pooler=self.pooler,
            normalize=self.normalize,
            max_length=self.max_length,
            precision=self.precision,
            postprocess=self.postprocess,
        )

    def fit(self, texts=None, y=None):
        self.recipe()  # validate the parameters now, with the recipe's own messages
        return self

    def transform(self, texts) -> np.ndarray:
        texts = [str(t) for t in (texts.tolist() if hasattr(texts, "tolist") else texts)]
        recipe = self.recipe()
        settings = content_key(recipe.to_dict())
        embedder = _EMBEDDERS.get(settings) or _EMBEDDERS.setdefault(settings, Embedder(recipe))
        key = content_key([settings, embedder.fingerprint])  # weights changed on disk: other vectors
        missing = list(dict.fromkeys(t for t in texts if (key, t) not in _VECTORS))
        if missing:
            for text, vector in zip(missing, embedder.encode(missing), strict=True):
                _VECTORS[(key, text)] = vector
            while len(_VECTORS) > CACHE_LIMIT:
                _VECTORS.popitem(last=False)
        for text in texts:
            _VECTORS.move_to_end((key, text))
        return np.stack([_VECTORS[(key, t)] for t in texts])  # [n, D]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        return tags
