import numpy as np
import pytest
import torch

from bertlens.metrics.ranking import ranking_metrics, top_k

pytrec_eval = pytest.importorskip("pytrec_eval")


def _random_run(seed: int, queries: int = 40, docs: int = 300):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(queries, docs))  # distinct scores: no tie-breaking differences
    judgements = []
    for _ in range(queries):
        judged = rng.choice(docs, size=rng.integers(1, 30), replace=False)
        grades = rng.integers(0, 4, size=len(judged))
        grades[0] = max(grades[0], 1)  # every query has a relevant document
        judgements.append({int(d): int(g) for d, g in zip(judged, grades)})
    return scores, judgements


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_metrics_equal_trec_eval(seed):
    scores, judgements = _random_run(seed)
    ranked = np.argsort(-scores, axis=1)[:, :100]
    ours = ranking_metrics(ranked, judgements)
    qrels = {str(q): {str(d): g for d, g in judged.items()} for q, judged in enumerate(judgements)}
    run = {str(q): {str(d): float(scores[q, d]) for d in ranked[q]} for q in range(len(ranked))}
    run10 = {str(q): {str(d): float(scores[q, d]) for d in ranked[q, :10]} for q in range(len(ranked))}
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "map_cut.100"}).evaluate(run)
    mrr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run10)  # MRR@10: the run cut at 10
    for q in range(len(ranked)):
        assert ours["ndcg@10"][q] == pytest.approx(reference[str(q)]["ndcg_cut_10"], abs=1e-4)
        assert ours["recall@100"][q] == pytest.approx(reference[str(q)]["recall_100"], abs=1e-4)
        assert ours["map@100"][q] == pytest.approx(reference[str(q)]["map_cut_100"], abs=1e-4)
        assert ours["mrr@10"][q] == pytest.approx(mrr[str(q)]["recip_rank"], abs=1e-4)


def test_a_query_with_nothing_retrieved_scores_zero():
    metrics = ranking_metrics(np.arange(100)[None], [{500: 2}])
    assert all(metrics[name][0] == 0 for name in metrics)


def test_blocked_search_equals_the_full_product():
    generator = torch.Generator().manual_seed(0)
    queries, documents = torch.randn(37, 16, generator=generator), torch.randn(1000, 16, generator=generator)
    scores, rows = top_k(queries, documents, k=50, doc_block=128)
    full = queries @ documents.T
    expected_scores, expected_rows = full.topk(50, dim=1)
    assert torch.equal(rows, expected_rows)
    assert torch.allclose(scores, expected_scores)


def test_ties_rank_the_lower_document_first_in_every_block_layout():
    documents = torch.ones(300, 4)  # every score equal
    for block in (7, 64, 300):
        _, rows = top_k(torch.ones(2, 4), documents, k=20, doc_block=block)
        assert rows.tolist() == [list(range(20))] * 2


def test_maxsim_search_ranks_documents_by_their_best_piece():
    from bertlens.metrics.ranking import top_k_maxsim

    generator = torch.Generator().manual_seed(1)
    queries, pieces = torch.randn(9, 8, generator=generator), torch.randn(500, 8, generator=generator)
    owner = torch.randint(0, 120, (500,), generator=generator)
    owner[:120] = torch.arange(120)  # every document has a piece
    scores, rows = top_k_maxsim(queries, pieces, owner, 120, k=30, piece_block=64, query_block=4)
    full = queries @ pieces.T  # [Q, P]
    per_doc = torch.stack([full[:, owner == d].max(dim=1).values for d in range(120)], dim=1)  # [Q, N]
    expected_scores, expected_rows = per_doc.topk(30, dim=1)
    assert torch.equal(rows, expected_rows) and torch.allclose(scores, expected_scores)


def test_ties_inside_the_top_k_are_ordered_by_document_row():
    values = torch.tensor([1.0, 3.0, 2.0, 3.0, 0.5, 3.0, 2.0])  # three documents score 3, two score 2
    documents = values[:, None]  # [7, 1]: a document's score is its value
    scores, rows = top_k(torch.ones(1, 1), documents, k=5, doc_block=3)
    assert rows.tolist() == [[1, 3, 5, 2, 6]] and scores.tolist() == [[3.0, 3.0, 3.0, 2.0, 2.0]]
    _, rows = top_k(torch.ones(1, 1), documents, k=4, doc_block=4)  # the tie at 2 crosses the cut
    assert rows.tolist() == [[1, 3, 5, 2]]
