"""The retrieval scorer against the references: sentence-transformers vectors ranked and judged by pytrec_eval."""

import numpy as np
import pytest
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.features.bank import build_bank
from bertlens.probing.candidates import Candidate
from bertlens.probing.retrieval import score_candidates
from bertlens.tasks.retrieval import load_beir

from ..conftest import DATA

pytrec_eval = pytest.importorskip("pytrec_eval")


@pytest.mark.extended  # about 2 minutes (two encodings of 1,623 texts): CI runs it with `make test-extended`
def test_cranfield_last_layer_mean_ndcg_equals_sentence_transformers_and_pytrec_eval(default_model_dir, tmp_path):
    """Acceptance (#26): the same collection (bertlens drops Cranfield's two empty documents and the one judgement
    that names one of them), ranked by sentence-transformers' vectors and judged by pytrec_eval."""
    from sentence_transformers import SentenceTransformer

    collection = load_beir(DATA / "retrieval" / "cranfield", drop_invalid=True)
    test = collection.judged("test")
    judgements = [collection.qrels["test"][q] for q in test]
    queries = [collection.queries[q] for q in test]
    encoder = Encoder(str(default_model_dir), max_length=256)  # sentence-transformers' limit for this model
    texts = list(dict.fromkeys([*collection.documents, *queries]))
    bank = build_bank(encoder, texts, tmp_path, poolers=("mean",), dtype="float32")
    index = {t: i for i, t in enumerate(texts)}
    last = Candidate("mean", f"L{encoder.num_layers}", "single", (encoder.num_layers,))
    ours = score_candidates(
        bank,
        [last],
        np.array([index[d] for d in collection.documents]),
        np.array([index[q] for q in queries]),
        judgements,
    ).per_query

    model = SentenceTransformer(str(default_model_dir), device="cpu")
    assert model.max_seq_length == 256
    doc_vectors = model.encode(list(collection.documents), batch_size=64, normalize_embeddings=True)
    query_vectors = model.encode(queries, batch_size=64, normalize_embeddings=True)
    scores = torch.from_numpy(query_vectors @ doc_vectors.T)  # [Q, N]
    top_scores, top_rows = scores.topk(100, dim=1)
    run = {
        str(q): {collection.doc_ids[d]: float(s) for d, s in zip(rows.tolist(), values.tolist())}
        for q, rows, values in zip(test, top_rows, top_scores)
    }
    qrels = {str(q): {collection.doc_ids[d]: g for d, g in j.items()} for q, j in zip(test, judgements)}
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"}).evaluate(run)
    expected = np.mean([reference[str(q)]["ndcg_cut_10"] for q in test])
    assert ours["ndcg@10"].mean() == pytest.approx(expected, abs=1e-3)
    assert ours["recall@100"].mean() == pytest.approx(np.mean([r["recall_100"] for r in reference.values()]), abs=1e-3)
    assert 0.3 < expected < 0.7  # a real retrieval figure, not a degenerate one


def test_constant_vectors_leave_a_candidate_undefined(tiny_bert_dir, tmp_path):
    encoder = Encoder(str(tiny_bert_dir))
    texts = ["alpha beta", "gamma delta", "epsilon", "zeta eta theta", "what is alpha", "where is zeta"]
    bank = build_bank(encoder, texts, tmp_path, poolers=("cls", "mean"), dtype="float32")
    candidates = [Candidate("cls", "L0", "single", (0,)), Candidate("mean", "L1", "single", (1,))]
    scores = score_candidates(bank, candidates, np.arange(4), np.array([4, 5]), [{0: 1}, {3: 2}]).per_query
    assert np.isnan(scores["ndcg@10"][0]).all()  # [CLS] of the embedding layer is one vector for every text
    assert np.isfinite(scores["ndcg@10"][1]).all()


def test_long_document_readings_share_one_encoding_per_way_of_cutting(tiny_bert_dir, monkeypatch):
    import bertlens.probing.retrieval as retrieval

    calls = []
    encode = retrieval.encode_pieces
    monkeypatch.setattr(retrieval, "encode_pieces", lambda *a, **k: calls.append(a[3]) or encode(*a, **k))
    encoder = Encoder(str(tiny_bert_dir), max_length=32)
    documents = tuple(" ".join(f"word{(i * 7 + k) % 40}" for k in range(90)) for i in range(6))
    queries = np.random.default_rng(0).normal(size=(3, 32)).astype(np.float32)
    read, scores, how, _ = retrieval.score_readings(
        encoder, Candidate("mean", "L2", "single", (2,)), documents, queries, [{0: 1}, {1: 1}, {2: 1}]
    )
    assert len(read) == len(retrieval.READINGS) == 7 and np.isfinite(scores["ndcg@10"]).all()
    assert len(calls) == 4  # head_tail, windows, 64-token chunks, late chunks: mean and maxp share the pieces
    assert how.count("maxp") == 3
