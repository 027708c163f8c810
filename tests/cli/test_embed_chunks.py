"""`bertlens embed` with a chunk recipe: one row per chunk with its text's id, number and characters, in .npy
(plus OUT.chunks.npy) and Parquet; the query role writes one vector per text."""

import numpy as np
import pyarrow.parquet as pq

from bertlens.cli.main import main
from bertlens.representation.recipe import Recipe

TEXTS = [" ".join(["word"] * n + ["end"]) for n in (5, 70, 30)]


def test_chunk_rows_in_npy_and_parquet(tmp_path, tiny_bert_dir, capsys):
    source = tmp_path / "texts.txt"
    source.write_text("\n".join(TEXTS) + "\n")
    recipe = Recipe(model=str(tiny_bert_dir), max_length=32, long_text="chunks:16:maxp").save(tmp_path / "r.json")
    assert main(["embed", str(source), "--recipe", str(recipe), "--out", str(tmp_path / "v.npy"), "--quiet"]) == 0
    assert "chunk vectors of 3 texts" in capsys.readouterr().err
    vectors, spans = np.load(tmp_path / "v.npy"), np.load(tmp_path / "v.chunks.npy")
    assert len(vectors) == len(spans) > 3
    assert sorted(set(spans[:, 0].tolist())) == [1, 2, 3]  # input line numbers, as embed's ids are
    for line, _chunk, start, end in spans.tolist():
        assert 0 <= start < end <= len(TEXTS[line - 1])
    second = spans[spans[:, 0] == 2]
    assert second[:, 1].tolist() == list(range(len(second))) and second[-1, 3] == len(TEXTS[1])
    assert main(["embed", str(source), "--recipe", str(recipe), "--out", str(tmp_path / "v.parquet"), "--quiet"]) == 0
    table = pq.read_table(tmp_path / "v.parquet")
    assert table.column_names == ["id", "chunk", "start", "end", "embedding"]
    np.testing.assert_array_equal(np.array(table.column("embedding").to_pylist(), dtype=np.float32), vectors)
    assert main(["embed", str(source), "--recipe", str(recipe), "--role", "query", "--out", str(tmp_path / "q.npy"),
                 "--quiet"]) == 0  # fmt: skip
    assert np.load(tmp_path / "q.npy").shape[0] == 3  # queries are read whole, one vector each
