from bertlens.tasks.augment import word_dropout


def test_word_dropout_is_seeded_keeps_order_and_at_least_one_word():
    texts = ["the quick brown fox jumps over the lazy dog"] * 50 + ["one"]
    a, b = word_dropout(texts, seed=3), word_dropout(texts, seed=3)
    assert a == b and a != word_dropout(texts, seed=4)
    for original, dropped in zip(texts, a):
        words = original.split()
        kept = dropped.split()
        assert 1 <= len(kept) <= len(words)
        it = iter(words)
        assert all(w in it for w in kept)  # a subsequence: order kept
    total = sum(len(t.split()) for t in texts)
    assert 0.05 < 1 - sum(len(t.split()) for t in a) / total < 0.15  # about 10% of words dropped
    assert word_dropout(["only"], rate=1.0) == ["only"]
