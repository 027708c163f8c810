"""Memory of embedding one very long document with strided windows: peak RSS at 10,000 vs 100,000 words.

Usage: python bench/long_documents.py [MODEL]
Each size runs in a fresh subprocess (`bertlens embed --long-text windows:mean`), so peak RSS
(ru_maxrss of the child) is that run's alone. Bounded memory means the 100,000-word document
needs about what the 10,000-word one does, although it has ten times the windows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import DATA, REPO  # noqa: F401  (offline environment)


def document(words: int) -> str:
    reviews = (DATA / "movie_reviews" / "reviews.jsonl").read_text().splitlines()
    text = " ".join(json.loads(line)["text"].replace("\n", " ") for line in reviews[:200])
    tokens = text.split()
    return " ".join(tokens[i % len(tokens)] for i in range(words))


CHILD = """
import resource, sys
from bertlens.cli.main import main
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(code)
"""


def run(model: str, words: int, folder: Path) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of a fresh process embedding one document of `words` words."""
    source = folder / f"doc{words}.txt"
    source.write_text(document(words) + "\n")
    start = time.perf_counter()
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            "embed",
            str(source),
            "--model",
            model,
            "--long-text",
            "windows:mean",
            "--out",
            str(folder / f"v{words}.npy"),
            "--quiet",
        ],
        check=True,
        env={**os.environ},
        capture_output=True,
        text=True,
    )
    assert np.isfinite(np.load(folder / f"v{words}.npy")).all()
    return int(result.stdout.strip().splitlines()[-1]) / 1024, time.perf_counter() - start


if __name__ == "__main__":
    model = sys.argv[1] if len(sys.argv) > 1 else "default"
    with tempfile.TemporaryDirectory() as tmp:
        small = run(model, 10_000, Path(tmp))
        large = run(model, 100_000, Path(tmp))
    print(
        f"model {model}, windows:mean; peak RSS 10,000 words: {small[0]:.0f} MB ({small[1]:.0f} s); "
        f"100,000 words: {large[0]:.0f} MB ({large[1]:.0f} s); growth {100 * (large[0] / small[0] - 1):+.1f}%"
    )
