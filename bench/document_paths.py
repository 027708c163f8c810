"""Every path of bertlens and of sentence-transformers on documents: texts/s and fidelity, side by side.

Usage: python bench/document_paths.py [--model DIR] [--length 256] [--docs 200] [--calibration 300] [--rounds 3]
       [--sentences N] (N STS-B sentences instead of reviews, calibrated on 300 others; both drawn at random)
       [--st-python PYTHON] (sentence-transformers' ONNX and OpenVINO backends, run by bench/st_backends_worker.py
       in the venv of that Python, interleaved round by round)
       [--skip-exports DIR]  (reuse the exports of an earlier run kept in DIR)
       [--gate-min C]  (bertlens' exports gated at min cosine C instead of 0.98: an equal-fidelity comparison)

Issue #62: users who index for search embed chunks of 256-512 tokens, where attention and memory traffic weigh more
than on sentences. This bench cuts `--docs` movie reviews (../shared/data/movie_reviews, the first N) at `--length`
tokens (both sides truncate there), makes bertlens' exports of the default recipe (mean pooling) calibrated on
`--calibration` other reviews, and times, in interleaved rounds (best of `--rounds`, each path warmed first):
- bertlens: PyTorch fp32 and bf16; ONNX Runtime fp32 and gated int8 (`export --format onnx --quantize int8`);
  OpenVINO f32, bf16 and NNCF int8 (`export --format openvino [--quantize bf16|int8-static]`);
- sentence-transformers: its torch backend in fp32 and with bf16 weights, batch 32; with `--st-python`, its ONNX fp32,
  ONNX qint8, OpenVINO and OpenVINO static int8 backends (bench/st_backends_worker.py: `optimum-intel` and
  `optimum-onnx` need other transformers than this stack's, so they run in a venv of their own).
Fidelity is each path's min and mean cosine to bertlens' PyTorch fp32 vectors of the same texts (sentence-transformers
fp32 equals them to 1e-6). Each export's own time is printed. Run it alone: a second job on 2 cores skews ratios.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
REVIEWS = REPO.parent / "shared" / "data" / "movie_reviews" / "reviews.jsonl"
STSB = REPO.parent / "shared" / "data" / "stsb" / "train.csv"


def cpu_name() -> str:
    lines = subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
    name = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Model name")), platform.processor())
    return f"{name}, {len(__import__('os').sched_getaffinity(0))} cores"


def cut(tokenizer, texts: list[str], length: int) -> list[str]:
    """Each text cut to `length` tokens (special tokens included) and decoded: both libraries then read the same
    tokens, with nothing truncated by either."""
    ids = tokenizer(texts, truncation=True, max_length=length, add_special_tokens=True)["input_ids"]
    return [tokenizer.decode(row, skip_special_tokens=True) for row in ids]


EXPORTS = ("onnx-int8", "openvino", "openvino-bf16", "openvino-int8")


def exports(model: str, length: int, calibration: list[str], root: Path, reuse: bool, which, gate_min: float) -> dict:
    """bertlens' exports of the recipe (`which` of EXPORTS), each timed (seconds); reused from `root` when asked."""
    from bertlens.api.export import export
    from bertlens.errors import BertlensError

    calib = root / "calibration.txt"
    calib.write_text("\n".join(t.replace("\n", " ") for t in calibration) + "\n")
    made = {}
    plans = {
        "onnx-int8": {"format": "onnx", "quantize": "int8"},
        "openvino": {"format": "openvino"},
        "openvino-bf16": {"format": "openvino", "quantize": "bf16"},
        "openvino-int8": {"format": "openvino", "quantize": "int8-static"},
    }
    for name, how in plans.items():
        if name not in which:
            continue
        out = root / name
        if reuse and (out / "export.json").is_file():
            made[name] = (out, float(json.loads((out / "export.json").read_text()).get("seconds", 0)))
            continue
        start = time.perf_counter()
        try:
            export(model=model, max_length=length, pooler="mean", texts=calib, calibration=calib, samples=64, out=out,
                   gate_min=gate_min, quiet=True, **how)  # fmt: skip
        except BertlensError as refused:  # a gate's refusal is a result: its row is listed as not made
            print(f"export {name}: refused after {time.perf_counter() - start:.0f} s: {refused}", flush=True)
            continue
        made[name] = (out, time.perf_counter() - start)
        print(f"export {name}: {made[name][1]:.0f} s", flush=True)
    return made


def reply(worker):
    """The worker's next answer (its lines start with @@worker; the libraries print other lines on stdout too)."""
    for line in worker.stdout:
        if line.startswith("@@worker "):
            return json.loads(line.removeprefix("@@worker "))
    raise RuntimeError(f"the sentence-transformers worker ended (exit {worker.wait()}); run it alone to see why")


def start_worker(python: str, model: str, length: int, docs, calibration, root: Path):
    """bench/st_backends_worker.py in the other venv, its exports made and warmed; returns the process."""
    (root / "st-docs.json").write_text(json.dumps(docs))
    (root / "st-calibration.json").write_text(json.dumps(calibration))
    command = [python, str(REPO / "bench" / "st_backends_worker.py"), model, str(length), str(root / "st-docs.json"),
               str(root / "st-calibration.json"), str(root / "st-work")]  # fmt: skip
    worker = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})  # fmt: skip
    ready = reply(worker)["ready"]
    print("sentence-transformers exports: " + ", ".join(f"{k} {v:.0f} s" for k, v in ready.items()), flush=True)
    return worker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="model directory (default: the embedded all-MiniLM-L6-v2)")
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--calibration", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=None, help="STS-B sentences instead of reviews")
    parser.add_argument("--st-python", default=None, help="a Python with sentence-transformers[onnx,openvino]")
    parser.add_argument("--skip-exports", type=Path, default=None)
    parser.add_argument("--exports", default=",".join(EXPORTS), help="which exports to make and time")
    parser.add_argument("--gate-min", type=float, default=0.98, help="bertlens' exports: the gate's min cosine")
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from bertlens.embedding.embedder import Embedder
    from bertlens.embedding.onnx_backend import OnnxEmbedder
    from bertlens.embedding.openvino_backend import OpenVinoEmbedder
    from bertlens.models import resolve_model
    from bertlens.representation.recipe import Recipe

    ref = resolve_model(args.model or Recipe().model)
    model, shown = str(ref.path), ref.name if ref.name != "default" else "all-MiniLM-L6-v2 (default)"
    reviews = [json.loads(line)["text"] for line in REVIEWS.read_text().splitlines()]
    st = SentenceTransformer(model, device="cpu")
    st.max_seq_length = args.length
    docs = cut(st.tokenizer, reviews[: args.docs], args.length)
    calibration = cut(st.tokenizer, reviews[1000 : 1000 + args.calibration], args.length)
    if args.sentences:
        sentences = list(dict.fromkeys(t for row in csv.reader(STSB.open(encoding="utf-8")) for t in row[:2]))
        # both drawn at random, disjoint: STS-B's file runs from captions to headlines, and static int8 calibrated
        # on one genre does not carry to the other (bench/calibration_shift.py)
        order = np.random.default_rng(0).permutation(len(sentences))
        docs = [sentences[i] for i in order[: args.sentences]]
        calibration = [sentences[i] for i in order[args.sentences : args.sentences + args.calibration]]
    root = args.skip_exports or Path(tempfile.mkdtemp(prefix="bertlens-docs-"))
    root.mkdir(parents=True, exist_ok=True)
    reuse, which = args.skip_exports is not None, args.exports.split(",")
    made = exports(model, args.length, calibration, root, reuse, which, args.gate_min)

    recipe = Recipe(model=model, max_length=args.length, pooler="mean")
    st_bf16 = SentenceTransformer(model, device="cpu", model_kwargs={"torch_dtype": torch.bfloat16})
    st_bf16.max_seq_length = args.length
    paths = {
        "bertlens torch fp32": Embedder(recipe.replace(precision="fp32")).encode,
        "bertlens torch bf16": Embedder(recipe.replace(precision="bf16")).encode,
    }
    on_exports = {
        "bertlens onnx fp32 (ONNX Runtime)": ("openvino", OnnxEmbedder),
        "bertlens onnx int8 (gated)": ("onnx-int8", OnnxEmbedder),
        "bertlens openvino f32": ("openvino", OpenVinoEmbedder),
        "bertlens openvino bf16 (gated)": ("openvino-bf16", OpenVinoEmbedder),
        "bertlens openvino int8 (NNCF, gated)": ("openvino-int8", OpenVinoEmbedder),
    }
    paths |= {name: runtime(made[export][0]).encode for name, (export, runtime) in on_exports.items() if export in made}
    paths |= {
        "sentence-transformers torch fp32": lambda t: st.encode(t, batch_size=32),
        "sentence-transformers torch bf16 weights": lambda t: st_bf16.encode(t, batch_size=32).astype(np.float32),
    }
    worker = start_worker(args.st_python, model, args.length, docs, calibration, root) if args.st_python else None

    reference = paths["bertlens torch fp32"](docs)
    best = {name: float("inf") for name in paths}
    vectors = {}
    for name, encode in paths.items():
        vectors[name] = np.asarray(encode(docs[:16]))  # warm-up
    for _ in range(args.rounds):
        for name, encode in paths.items():
            start = time.perf_counter()
            vectors[name] = np.asarray(encode(docs), dtype=np.float32)
            best[name] = min(best[name], time.perf_counter() - start)
        if worker is not None:  # sentence-transformers' other backends, in this round too
            worker.stdin.write("round\n")
            worker.stdin.flush()
            for name, seconds in reply(worker).items():
                best[name] = min(best.get(name, float("inf")), seconds)
    if worker is not None:
        worker.stdin.write(f"vectors {root / 'st.npz'}\nquit\n")
        worker.stdin.flush()
        assert reply(worker) == "ok"
        vectors |= dict(np.load(root / "st.npz"))
        worker.wait()
    st_fastest = min((n for n in best if n.startswith("sentence-transformers")), key=best.get)  # with the worker's
    what = f"{len(docs)} STS-B sentences" if args.sentences else f"{len(docs)} reviews cut at {args.length} tokens"
    print(f"\n{cpu_name()}; torch {torch.__version__}; model {shown}; {what}; best of {args.rounds} interleaved "
          "rounds")  # fmt: skip
    print(f"| path | docs/s | vs {st_fastest} | min cosine | mean cosine |")
    print("|---|---|---|---|---|")
    for name in best:
        v, r = vectors[name], reference
        cos = (v * r).sum(1) / np.linalg.norm(v, axis=1) / np.linalg.norm(r, axis=1)
        rate = len(docs) / best[name]
        print(f"| {name} | {rate:.1f} | {best[st_fastest] / best[name]:.2f}x | {cos.min():.4f} | {cos.mean():.5f} |")
    if worker is None:
        print("not run: sentence-transformers' ONNX and OpenVINO backends (give --st-python; docs/results-log.md)")
    print("export seconds: " + ", ".join(f"{n} {s:.0f} s" for n, (_, s) in made.items()))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
