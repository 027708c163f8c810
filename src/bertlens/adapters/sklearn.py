"""`RecipeVectorizer`: a recipe as a scikit-learn transformer (texts -> vectors), for Pipelines and grid searches.

Its parameters are the fields of `Recipe`, every one, written out in the constructor as scikit-learn reads them
(a test keeps them equal to the dataclass's fields and defaults), stored unchanged by the constructor: scikit-learn's
`clone`, `get_params` and `set_params` round-trip them,
so a `GridSearchCV` can search poolers and layers as well as the classifier's C. `fit` validates them into
`recipe_` and loads the encoder (`embedder_`); it learns nothing from the texts (a fitted post-processing
belongs to the recipe's `postprocess` file, fitted with `bertlens postprocess` on texts of its own).

Vectors are cached in an `EncodingCache` with a bounded size: by default one per fitted instance; pass
`cache=EncodingCache()` to share one across the clones a grid search makes, so refitting the classifier
for every C and every fold re-encodes nothing.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.protocol import TextEncoder
from bertlens.io.cache import content_key
from bertlens.representation.recipe import TOKEN_FIELDS, Recipe

# a vectorizer gives one vector per text, so the fields only a multi-vector recipe reads are not its parameters
RECIPE_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Recipe) if f.name not in TOKEN_FIELDS}


class EncodingCache:
    """Vectors per (recipe, weights, text), least recently used dropped beyond `max_vectors`, and one encoder per
    recipe. `clone` deep-copies estimator parameters: this object hands out itself instead, so clones share it."""

    def __init__(self, max_vectors: int = 200_000):
        if max_vectors < 1:
            raise ValueError("max_vectors must be at least 1")
        self.max_vectors = max_vectors
        self.vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self.encoders: dict[str, TextEncoder] = {}

    def __deepcopy__(self, memo) -> EncodingCache:
        return self

    def encoder(self, recipe: Recipe) -> TextEncoder:
        key = content_key(recipe.to_dict())
        if key not in self.encoders:
            self.encoders[key] = Embedder(recipe)
        return self.encoders[key]

    def encode(self, encoder: TextEncoder, texts: Sequence[str]) -> np.ndarray:
        """[n, D] float32 for `texts`, encoding only those not cached (weights changed on disk: other vectors)."""
        key = content_key([encoder.recipe.to_dict(), encoder.fingerprint])
        missing = list(dict.fromkeys(t for t in texts if (key, t) not in self.vectors))
        fresh = dict(zip(missing, encoder.encode(missing), strict=True)) if missing else {}
        out = np.stack([fresh[t] if t in fresh else self.vectors[(key, t)] for t in texts])  # [n, D]
        for text in (*missing, *texts):
            if text in fresh:
                self.vectors[(key, text)] = fresh[text]
            self.vectors.move_to_end((key, text))
        while len(self.vectors) > self.max_vectors:
            self.vectors.popitem(last=False)
        return out


class RecipeVectorizer(TransformerMixin, BaseEstimator):
    """`RecipeVectorizer(model="default", layers=(-1,), pooler="mean").fit(texts).transform(texts)` -> [n, D].

    Parameters: every `Recipe` field (see bertlens.representation.recipe), plus `cache`. As the CLI does,
    several layers with the default mixer 'single' are averaged.
    """

    def __init__(
        self,
        *,
        model="default",
        layers=(-1,),
        mixer="single",
        pooler="mean",
        include_special=True,
        attention_layer=-1,
        normalize=False,
        max_length=None,
        precision="fp32",
        mix_weights=None,
        mix_gamma=1.0,
        mix_layer_norm=False,
        postprocess=None,
        long_text=None,
        query_prompt=None,
        document_prompt=None,
        dimension_loss=None,
        cache=None,
    ):
        given = dict(locals())
        for name in (*RECIPE_DEFAULTS, "cache"):  # stored unchanged: scikit-learn's convention
            setattr(self, name, given[name])

    def _recipe(self) -> Recipe:
        fields = {name: getattr(self, name) for name in RECIPE_DEFAULTS}
        layers = tuple(fields["layers"])
        if fields["mixer"] == "single" and len(layers) > 1:
            fields["mixer"] = "mean"
        return Recipe(**{**fields, "layers": layers})

    def fit(self, texts=None, y=None):
        self.recipe_ = self._recipe()  # the recipe's own messages for bad parameters, here and not later
        self.cache_ = self.cache if self.cache is not None else EncodingCache()
        self.embedder_ = self.cache_.encoder(self.recipe_)
        return self

    def transform(self, texts) -> np.ndarray:
        check_is_fitted(self, "recipe_")
        texts = [str(t) for t in (texts.tolist() if hasattr(texts, "tolist") else texts)]  # arrays, pandas Series
        return self.cache_.encode(self.embedder_, texts)

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        check_is_fitted(self, "recipe_")
        return np.array([f"dim{i}" for i in range(self.embedder_.dim)], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        return tags
