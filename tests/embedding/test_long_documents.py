"""Long documents: head equals plain truncation, pieces do not depend on batch-mates, aggregates, a huge text."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.long_text import Pieces, encode_long, encode_pieces
from bertlens.encoding.chunking import LongText, parse_long_text
from bertlens.encoding.encoder import Encoder
from bertlens.encoding.pieces import piece_size
from bertlens.representation.apply import Representation
from bertlens.representation.recipe import Recipe

WORDS = "the film was long but the acting felt honest and the ending surprised everyone in the room".split()


def document(words: int, seed: int) -> str:
    return " ".join(np.random.default_rng(seed).choice(WORDS, words))


@pytest.fixture(scope="module")
def encoder(tiny_bert_dir):
    return Encoder(str(tiny_bert_dir), max_length=32)


def test_head_equals_plain_truncation(encoder):
    texts = [document(80, 1), document(10, 2)]
    recipe = Recipe(model=encoder.ref.name, pooler="mean", max_length=32)
    plain = Embedder(recipe, encoder=encoder).encode(texts)
    head = encode_long(encoder, Representation(recipe), texts, LongText("head"))
    np.testing.assert_allclose(head, plain, atol=1e-5)


def test_pieces_of_a_document_do_not_depend_on_its_batch(encoder):
    recipe = Recipe(model=encoder.ref.name, pooler="cls", max_length=32)
    docs = [document(200, 3), document(37, 4), document(5, 5)]
    together = encode_pieces(encoder, Representation(recipe), docs, LongText("windows", stride=10))
    alone = encode_pieces(encoder, Representation(recipe), docs[1:2], LongText("windows", stride=10))
    mine = together.doc_index == 1
    np.testing.assert_allclose(alone.vectors, together.vectors[mine], atol=1e-5)
    assert together.order[mine].tolist() == list(range(mine.sum()))
    size = piece_size(encoder)
    assert size == 30 and together.tokens.max() == size


def test_aggregates():
    pieces = Pieces(
        np.array([[1.0, 4.0], [3.0, 0.0], [5.0, 5.0]], dtype=np.float32),
        np.array([0, 0, 1]),
        np.array([30, 10, 7]),
        np.array([0, 1, 0]),
    )
    np.testing.assert_allclose(pieces.aggregate(2, "mean"), [[2.0, 2.0], [5.0, 5.0]])
    np.testing.assert_allclose(pieces.aggregate(2, "max"), [[3.0, 4.0], [5.0, 5.0]])
    np.testing.assert_allclose(pieces.aggregate(2, "first"), [[1.0, 4.0], [5.0, 5.0]])
    np.testing.assert_allclose(pieces.aggregate(2, "weighted"), [[1.5, 3.0], [5.0, 5.0]])


def test_a_100k_word_document_streams_through_windows(encoder):
    recipe = Recipe(model=encoder.ref.name, pooler="mean", max_length=32)
    huge = document(100_000, 6)
    vectors = encode_long(encoder, Representation(recipe), [huge, "short one"], parse_long_text("windows:30:mean"))
    assert vectors.shape == (2, 32) and np.isfinite(vectors).all()


def test_recipe_long_text_reaches_embed(tmp_path, tiny_bert_dir):
    from bertlens.cli.main import main

    texts = tmp_path / "docs.txt"
    texts.write_text(document(300, 7) + "\n" + document(20, 8) + "\n")
    assert (
        main(
            [
                "embed",
                str(texts),
                "--model",
                str(tiny_bert_dir),
                "--max-length",
                "32",
                "--long-text",
                "tail",
                "--precision",
                "fp32",
                "--out",
                str(tmp_path / "v.npy"),
                "--quiet",
            ]
        )
        == 0
    )
    recipe = Recipe(model=str(tiny_bert_dir), max_length=32, long_text="tail")
    np.testing.assert_allclose(
        np.load(tmp_path / "v.npy"), Embedder(recipe).encode(texts.read_text().splitlines()), atol=1e-5
    )
    assert (
        main(
            [
                "embed",
                str(texts),
                "--model",
                str(tiny_bert_dir),
                "--long-text",
                "windows:99:median",
                "--out",
                str(tmp_path / "w.npy"),
                "--quiet",
            ]
        )
        == 1
    )


def test_sweep_bank_with_windows_matches_the_embedder(tmp_path, encoder):
    from bertlens.features.bank import build_bank

    docs = [document(120, 9), document(12, 10), document(70, 11)]
    spec = parse_long_text("windows:10:max")
    bank = build_bank(encoder, docs, tmp_path, poolers=("mean", "max"), dtype="float32", long_text=spec)
    for pooler in ("mean", "max"):
        recipe = Recipe(model=encoder.ref.name, pooler=pooler, layers=(-1,), max_length=32)
        expected = encode_long(encoder, Representation(recipe), docs, spec)
        np.testing.assert_allclose(bank.layer(pooler, encoder.num_layers), expected, atol=1e-5)
    weighted = build_bank(
        encoder, docs, tmp_path, poolers=("mean",), dtype="float32", long_text=parse_long_text("windows:10:weighted")
    )
    recipe = Recipe(model=encoder.ref.name, pooler="mean", layers=(1,), max_length=32)
    np.testing.assert_allclose(
        weighted.layer("mean", 1),
        encode_long(encoder, Representation(recipe), docs, parse_long_text("windows:10:weighted")),
        atol=1e-5,
    )


def test_late_chunks_are_pooled_from_their_windows_token_states(encoder):
    """Brute force: encode each window alone, average the chunk's own token states (the last layer)."""
    import torch

    from bertlens.encoding.pieces import special_affixes

    doc = document(90, 12)
    spec = parse_long_text("late:8:mean")
    recipe = Recipe(model=encoder.ref.name, pooler="mean", max_length=32)
    pieces = encode_pieces(encoder, Representation(recipe), [doc], spec)
    prefix, suffix = special_affixes(encoder)
    content = encoder.tokenizer(doc, add_special_tokens=False)["input_ids"]
    size = piece_size(encoder)
    windows = [spans[0] for spans in spec.pieces(len(content), size)]
    expected = []
    for window, start, end in spec.chunks(len(content), size):
        a, b = windows[window]
        ids = torch.tensor([prefix + content[a:b] + suffix])
        with torch.inference_mode():
            states = encoder.model(input_ids=ids, output_hidden_states=True).hidden_states[-1][0]  # [T, H]
        offset = len(prefix) + start - a
        expected.append(states[offset : offset + end - start].mean(0).numpy())
    assert len(expected) == int(np.ceil(len(content) / 8)) and len(windows) > 2
    np.testing.assert_allclose(pieces.vectors, np.stack(expected), atol=1e-4)
    assert pieces.order.tolist() == list(range(len(expected))) and pieces.tokens.sum() == len(content)


def test_a_short_text_late_chunked_and_weighted_is_its_content_mean(encoder):
    text = document(12, 13)
    recipe = Recipe(model=encoder.ref.name, pooler="mean", max_length=32, include_special=False)
    late = encode_long(encoder, Representation(recipe), [text], parse_long_text("late:5:weighted"))
    np.testing.assert_allclose(late, Embedder(recipe, encoder=encoder).encode([text]), atol=1e-5)


def test_sweep_bank_with_late_chunking_matches_the_embedder(tmp_path, encoder):
    from bertlens.features.bank import build_bank

    docs = [document(120, 14), document(12, 15), document(70, 16)]
    spec = parse_long_text("late:7:max")
    bank = build_bank(encoder, docs, tmp_path, poolers=("mean", "max", "cls"), dtype="float32", long_text=spec)
    for pooler in ("mean", "max", "cls"):
        recipe = Recipe(model=encoder.ref.name, pooler=pooler, layers=(1,), max_length=32)
        expected = encode_long(encoder, Representation(recipe), docs, spec)
        np.testing.assert_allclose(bank.layer(pooler, 1), expected, atol=1e-5)


def test_independent_chunks_cut_the_text_into_spans_of_the_chunk_size():
    assert parse_long_text("chunks:10:maxp").pieces(25, 30) == [[(0, 10)], [(10, 20)], [(15, 25)]]
    assert parse_long_text("chunks:64").pieces(25, 30) == [[(0, 25)]]  # a chunk never exceeds the limit
    assert parse_long_text("chunks").name == "chunks:64:mean"


def test_maxp_is_one_vector_per_chunk_and_reads_a_query_whole(encoder):
    from bertlens.embedding.prompted import with_role
    from bertlens.errors import BertlensError

    texts = [document(80, 1), document(10, 2)]
    recipe = Recipe(model=encoder.ref.name, pooler="mean", max_length=32, long_text="windows:maxp")
    embedder = Embedder(recipe, encoder=encoder)
    with pytest.raises(BertlensError, match="one vector per chunk"):
        embedder.encode(texts)
    chunks = embedder.embed_chunks(texts)
    pieces = encode_pieces(encoder, Representation(recipe), texts, parse_long_text("windows"))
    np.testing.assert_array_equal(chunks.vectors, pieces.vectors)
    assert chunks.owner.tolist() == pieces.doc_index.tolist() and chunks.chunk.tolist() == pieces.order.tolist()
    first = chunks.characters[chunks.owner == 0]
    assert first[0, 0] == 0 and first[-1, 1] == len(texts[0]) and (np.diff(first[:, 0]) > 0).all()
    plain = Embedder(recipe.replace(long_text=None), encoder=encoder).encode(texts)
    np.testing.assert_array_equal(with_role(embedder, "query").encode(texts), plain)  # the query reading
    with pytest.raises(BertlensError, match="embed_chunks is for recipes"):
        Embedder(recipe.replace(long_text="windows:mean"), encoder=encoder).embed_chunks(texts)


def test_a_prompted_chunk_recipe_gives_spans_in_the_text_as_given(encoder):
    from bertlens.embedding.prompted import with_role

    text = document(60, 7)
    recipe = Recipe(model=encoder.ref.name, max_length=32, long_text="chunks:8:maxp", document_prompt="passage: ")
    chunks = with_role(Embedder(recipe, encoder=encoder), "document").embed_chunks([text])
    assert chunks.characters[0, 0] == 0 and chunks.characters[-1, 1] == len(text)
    assert (chunks.characters[:, 1] > chunks.characters[:, 0]).all()
