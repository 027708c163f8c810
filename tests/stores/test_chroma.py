"""The server store: a real Chroma server (`chroma run`, from the chromadb package) started by the test, indexed
and searched through `bertlens index --store` and `bertlens search`, with the same nDCG@10 as the sweep."""

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bertlens.cli.main import main
from bertlens.representation.recipe import Recipe
from tests.stores.test_lance import DOCS, QRELS, QUERIES, store_ndcg, sweep_ndcg
from tests.tasks.test_retrieval import write_beir

chromadb = pytest.importorskip("chromadb", reason="the stores extra is not installed: pip install '.[stores]'")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(chroma).exists():
        pytest.skip("the chroma command (from the chromadb package) is not on PATH")
    port, data = free_port(), tmp_path_factory.mktemp("chroma")
    server = subprocess.Popen(
        [chroma, "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(120):
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()  # the client connects when made
                break
            except Exception:  # noqa: BLE001 - not up yet: any client error
                time.sleep(0.5)
        else:
            pytest.fail("the Chroma server did not start within 60 s")
        yield f"chroma://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_search_through_a_chroma_server_gives_the_sweeps_ndcg(tmp_path, chroma_server, default_model_dir, capsys):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    recipe = Recipe(model=str(default_model_dir), precision="fp32").save(tmp_path / "recipe.json")
    store = f"{chroma_server}/notes"
    code = main(["index", "--data", str(root), "--recipe", str(recipe), "--store", store, "--batch", "5", "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert "indexed 18 documents (18 rows in the store)" in capsys.readouterr().err
    code = main(
        ["index", "--data", str(root), "--recipe", str(recipe), "--store", store, "--quiet"]
    )  # rerun: nothing new
    assert code == 0 and "resumed: 18 documents were already there" in capsys.readouterr().err
    assert store_ndcg(store, root) == pytest.approx(sweep_ndcg(tmp_path, root, default_model_dir), abs=1e-4)


def test_no_server_is_one_line(capsys, tmp_path):
    root = write_beir(tmp_path / "c", DOCS, QUERIES, QRELS)
    code = main(["index", "--data", str(root), "--store", f"chroma://127.0.0.1:{free_port()}/x", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "no Chroma server answers" in err and len(err.strip().splitlines()) == 1
