"""Known figures on real data: all-MiniLM-L6-v2 on STS-B test (cosine Spearman, last layer)."""

import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.metrics.bootstrap import spearman
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import load_catalog_task
from tests.conftest import DATA


@pytest.fixture(scope="module")
def sts_test():
    return load_catalog_task(get_task("stsb"), DATA).splits["test"]


def cosine_spearman(recipe, split):
    embedder = Embedder(recipe)
    u, v = embedder.encode(split.texts_a), embedder.encode(split.texts_b)
    cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    return float(spearman(cos[None], split.targets)[0])


@pytest.mark.extended  # encodes all of STS-B test (21 s)
def test_default_model_mean_pooling_matches_its_known_sts_b_figure(sts_test):
    mean = cosine_spearman(Recipe(pooler="mean"), sts_test)
    cls = cosine_spearman(Recipe(pooler="cls"), sts_test)
    assert mean == pytest.approx(0.818, abs=0.005)
    assert cls < mean
