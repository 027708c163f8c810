"""MaxSim (ColBERT's late interaction) against a direct NumPy computation, packing edge cases included."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.representation import late_interaction
from bertlens.representation.late_interaction import PackedTokens, maxsim


def _direct(queries: list[np.ndarray], documents: list[np.ndarray]) -> np.ndarray:
    """S(q, d) = sum_i max_j cos(q_i, d_j), pair by pair, in float64."""
    out = np.zeros((len(queries), len(documents)))
    for a, q in enumerate(queries):
        for b, d in enumerate(documents):
            qn = q / np.linalg.norm(q, axis=1, keepdims=True)
            dn = d / np.linalg.norm(d, axis=1, keepdims=True)
            out[a, b] = (qn @ dn.T).max(axis=1).sum()
    return out


def test_maxsim_on_3_queries_and_5_documents_equals_numpy():
    rng = np.random.default_rng(0)
    queries = [rng.normal(size=(n, 8)) for n in (2, 4, 3)]
    documents = [rng.normal(size=(n, 8)) for n in (5, 1, 7, 3, 2)]
    got = maxsim(PackedTokens.from_list(queries), PackedTokens.from_list(documents))
    np.testing.assert_allclose(got, _direct(queries, documents), rtol=1e-5)


def test_a_hand_made_example_scores_as_worked_out():
    """Query tokens e1 and e2; the first document holds e1 and e2+e3 (cos 1/sqrt2), the second only e3."""
    e = np.eye(3)
    query = PackedTokens.from_list([np.stack([e[0], e[1]])])
    docs = PackedTokens.from_list([np.stack([e[0], e[1] + e[2]]), e[2:3]])
    np.testing.assert_allclose(maxsim(query, docs), [[1 + 1 / np.sqrt(2), 0.0]], atol=1e-6)


def test_empty_documents_score_minus_infinity_and_empty_queries_zero(monkeypatch):
    rng = np.random.default_rng(1)
    queries = [rng.normal(size=(3, 4)), np.zeros((0, 4)), rng.normal(size=(1, 4))]
    documents = [rng.normal(size=(2, 4)), np.zeros((0, 4)), rng.normal(size=(4, 4)), np.zeros((0, 4))]
    monkeypatch.setattr(late_interaction, "SCORE_BYTES", 4 * 4 * 3)  # blocks of about 3 document tokens
    got = maxsim(PackedTokens.from_list(queries), PackedTokens.from_list(documents))
    assert np.isneginf(got[:, [1, 3]]).all()
    assert (got[1, [0, 2]] == 0).all()
    kept_q, kept_d = [queries[0], queries[2]], [documents[0], documents[2]]
    np.testing.assert_allclose(got[np.ix_([0, 2], [0, 2])], _direct(kept_q, kept_d), rtol=1e-5)


def test_blocks_of_documents_give_the_scores_of_one_block(monkeypatch):
    rng = np.random.default_rng(2)
    queries = PackedTokens.from_list([rng.normal(size=(n, 16)) for n in (3, 5)])
    documents = PackedTokens.from_list([rng.normal(size=(n, 16)).astype(np.float16) for n in rng.integers(1, 9, 40)])
    whole = maxsim(queries, documents)
    monkeypatch.setattr(late_interaction, "SCORE_BYTES", 4 * 8 * 10)
    assert len(late_interaction._document_blocks(documents.offsets, 8)) > 10
    np.testing.assert_allclose(maxsim(queries, documents), whole, rtol=1e-6)


def test_offsets_that_do_not_cover_the_rows_are_refused():
    with pytest.raises(ValueError, match="offsets must run from 0 to 4"):
        PackedTokens(np.zeros((4, 2)), np.array([0, 2, 3]))


def test_packed_tokens_round_trip_through_an_arrow_list_column_sliced_or_chunked():
    import pyarrow as pa

    rng = np.random.default_rng(0)
    tokens = PackedTokens.from_list([rng.standard_normal((n, 4)).astype(np.float32) for n in (3, 0, 5, 2)])
    column = tokens.to_arrow(pa.float32())
    assert column.type == pa.list_(pa.list_(pa.float32(), 4)) and len(column) == 4
    back = PackedTokens.from_arrow(column)
    np.testing.assert_array_equal(back.offsets, tokens.offsets)
    np.testing.assert_array_equal(back.vectors, tokens.vectors)
    tail = PackedTokens.from_arrow(pa.chunked_array([column.slice(2), column.slice(0, 1)]))  # texts 2, 3, then 0
    for got, want in zip(range(3), (2, 3, 0), strict=True):
        np.testing.assert_array_equal(tail.of(got), tokens.of(want))
    half = PackedTokens.from_arrow(tokens.to_arrow(pa.float16()))
    np.testing.assert_allclose(half.vectors, tokens.vectors, atol=2e-3)  # float16, as a multi-vector index keeps them
