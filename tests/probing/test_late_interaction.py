"""Late-interaction readings: the corpus ranked by MaxSim over a token bank, and a first stage re-ranked by it, equal
a direct NumPy computation over the same token vectors; the metrics are those of the pooled candidates."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.encoding.encoder import Encoder
from bertlens.features.token_bank import build_token_bank
from bertlens.metrics.ranking import ranking_metrics
from bertlens.probing.late_interaction import score_token_readings
from bertlens.representation.late_interaction import TokenReading

DOCUMENTS = [
    f"note {i}: " + ["wings and lift.", "engines, thrust!", "rain; weather", "bread & baking"][i % 4] for i in range(12)
]
QUERIES = ["what about wings?", "engine thrust", "how is bread baked"]
JUDGEMENTS = [{0: 1, 4: 2}, {1: 1, 5: 1, 9: 1}, {3: 1}]


@pytest.fixture(scope="module")
def banks(tiny_bert_dir, tmp_path_factory):
    encoder = Encoder(str(tiny_bert_dir), precision="fp32")
    cache = tmp_path_factory.mktemp("token-banks")
    layers = (1, encoder.num_layers)
    documents = build_token_bank(encoder, DOCUMENTS, cache, layers)
    queries = {
        0: build_token_bank(encoder, QUERIES, cache, layers),
        8: build_token_bank(encoder, QUERIES, cache, layers, augment=8),
    }
    return documents, queries


def _direct_scores(documents, queries, reading: TokenReading) -> np.ndarray:
    """[Q, N] MaxSim, text by text, with the reading's filters applied by hand."""
    k = documents.layers.index(reading.layer)

    def kept(bank, i, punctuation: bool) -> np.ndarray:
        rows = slice(bank.offsets[i], bank.offsets[i + 1])
        keep = np.ones(bank.offsets[i + 1] - bank.offsets[i], dtype=bool)
        keep &= ~bank.special[rows] if reading.drop_special else True
        keep &= ~bank.punctuation[rows] if punctuation else True
        x = bank.vectors[k, rows][keep].astype(np.float64)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    query_bank = queries[reading.augment]
    out = np.zeros((len(QUERIES), len(DOCUMENTS)))
    for q in range(len(QUERIES)):
        for d in range(len(DOCUMENTS)):
            out[q, d] = (kept(query_bank, q, False) @ kept(documents, d, reading.drop_punctuation).T).max(1).sum()
    return out


READINGS = [TokenReading(1), TokenReading(2, drop_special=True, drop_punctuation=True), TokenReading(2, augment=8)]


def test_maxsim_over_the_corpus_ranks_as_a_direct_computation(banks):
    documents, queries = banks
    got, _ = score_token_readings(documents, queries, READINGS, JUDGEMENTS)
    for i, reading in enumerate(READINGS):
        ranked = np.argsort(-_direct_scores(documents, queries, reading), axis=1, kind="stable")  # [Q, N]
        for metric, values in ranking_metrics(ranked, JUDGEMENTS).items():
            np.testing.assert_allclose(got[metric][i], values, err_msg=f"{reading.name} {metric}")
    assert READINGS[1].name == "tokens/L2+no-special+no-punct" and READINGS[2].name == "tokens/L2+q8"


def test_a_first_stage_is_re_ranked_by_maxsim_and_nothing_outside_it_is_found(banks):
    documents, queries = banks
    first_stage = np.array([[7, 0, 2, 5], [3, 1, 11, 6], [10, 9, 8, 4]])  # [Q, 4] the first stage's rows
    got, _ = score_token_readings(documents, queries, READINGS[:1], JUDGEMENTS, first_stage=first_stage)
    scores = _direct_scores(documents, queries, READINGS[0])
    ranked = np.stack([rows[np.lexsort((rows, -scores[q, rows]))] for q, rows in enumerate(first_stage)])
    for metric, values in ranking_metrics(ranked, JUDGEMENTS).items():
        np.testing.assert_allclose(got[metric][0], values)
    assert got["recall@100"][0][2] == 0.0  # document 3, query 3's only relevant one, was not in its first stage
