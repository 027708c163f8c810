"""E9: distil the recipe the STS-B sweep recommends into 4-, 3- and 2-layer students (issue #14).

Usage: python bench/e9_distillation.py [--out out/e9] [--students 4,3,2] [--epochs 2] [--teacher RECIPE.json]
                                      [--max-texts N] [--train-precision fp32|bf16] [--skip-concat]

Teacher: the default model (all-MiniLM-L6-v2, 6 layers) with the recipe `bertlens sweep --task stsb`
recommends (made here unless --teacher is given). Students: `layers:K` (K of the teacher's layers,
spread evenly, initialised from them), trained on unlabelled text that is not STS-B test text: the
STS-B and SST-2 training sentences plus the lines of `raw/state_union.txt` (deduplicated). Each is
scored on the STS-B test split (cosine Spearman) and with an SST-2 logistic probe, teacher and student
from the same paired bootstrap, with texts/s of both measured in the same run. Then one recipe that
sentence-transformers cannot serve as it stands (`mean/concat_last4`, 1,536 wide) is distilled into a
plain 3-layer student with a projection. Every step is a bertlens command, printed as it runs.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

from common import DATA, REPO


def bertlens(*args: str) -> None:
    print("$ bertlens " + " ".join(args), flush=True)
    done = subprocess.run([sys.executable, "-m", "bertlens", *args, "--quiet"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bertlens {args[0]} failed: {done.stderr[-1500:]}")


def prepare(work: Path, max_texts: int | None = None) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    with open(DATA / "stsb" / "train.csv", newline="", encoding="utf-8") as handle:
        texts = [text for row in csv.reader(handle) for text in row[:2]]
    with open(DATA / "sst2" / "train.txt", encoding="utf-8") as handle:
        texts += [line.split(" ", 1)[1].strip() for line in handle if " " in line]
    speech = (DATA / "raw" / "state_union.txt").read_text(encoding="utf-8").splitlines()
    texts += [line.strip() for line in speech if len(line.split()) >= 5]
    distinct = list(dict.fromkeys(t for t in texts if t.strip()))
    if max_texts and len(distinct) > max_texts:  # a seeded sample, in file order
        import numpy as np

        keep = np.sort(np.random.default_rng(0).choice(len(distinct), max_texts, replace=False))
        distinct = [distinct[i] for i in keep]
    path = work / "texts.txt"
    path.write_text("\n".join(distinct) + "\n", encoding="utf-8")
    print(f"{len(distinct):,} distinct training texts", flush=True)
    return path


def distil(teacher: Path, student: str, texts: Path, out: Path, epochs: int, precision: str = "fp32") -> dict:
    if not (out / "distill.json").is_file():
        bertlens(
            "distill",
            "--teacher",
            str(teacher),
            "--student",
            student,
            "--texts",
            str(texts),
            "--eval-task",
            "stsb",
            "sst2",
            "--epochs",
            str(epochs),
            "--train-precision",
            precision,
            "--cache-dir",
            str(out.parent / "cache"),
            "--out",
            str(out),
        )
    return json.loads((out / "distill.json").read_text())


def interval(triple) -> str:
    return f"{triple[0]:.4f} [{triple[1]:.4f}, {triple[2]:.4f}]"


def row(name: str, record: dict) -> str:
    sts, sst = record["evaluation"]
    fid, speed = record["fidelity"], record["speed"]
    return (
        f"| {name} | {record['student_layers']} | {interval(sts['student'])} | {sts['student'][0] / sts['teacher'][0]:.1%} "
        f"| {interval(sst['student'])} | {speed['ratio']:.2f}x | {fid['mean']:.4f} / {fid['p1']:.4f} / {fid['min']:.4f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=REPO / "out" / "e9")
    parser.add_argument("--students", default="4,3,2")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--teacher", type=Path, help="a teacher recipe (default: what the STS-B sweep recommends)")
    parser.add_argument("--max-texts", type=int, help="a seeded sample of the training texts (a time budget)")
    parser.add_argument("--train-precision", default="fp32", help="fp32, or bf16 where the CPU has it")
    parser.add_argument("--skip-concat", action="store_true", help="leave out the concat_last4 student (default model)")
    parser.add_argument(
        "--retime",
        action="store_true",
        help="time the teacher and the students again, together, at the teacher's precision",
    )
    args = parser.parse_args()
    work = args.out
    texts = prepare(work, args.max_texts)
    teacher = args.teacher
    if teacher is None:
        teacher = work / "sweep-stsb" / "recipe.json"
        if not teacher.is_file():
            bertlens("sweep", "--task", "stsb", "--data-dir", str(DATA), "--out", str(work / "sweep-stsb"))
    print(f"teacher recipe: {json.loads(teacher.read_text())}", flush=True)
    records = {
        k: distil(teacher, f"layers:{k}", texts, work / f"student-{k}", args.epochs, args.train_precision)
        for k in args.students.split(",")
    }
    first = next(iter(records.values()))
    sts, sst = first["evaluation"]
    print(
        "\n| model | layers | STS-B test Spearman [95% CI] | share of teacher | SST-2 probe accuracy [95% CI] "
        "| texts/s vs teacher | cosine to teacher (mean / 1st pct / min) |"
    )
    print("|---|---|---|---|---|---|---|")
    from bertlens.models import resolve_model
    from bertlens.representation.recipe import Recipe

    teacher_layers = resolve_model(Recipe.load(teacher).model).num_layers
    print(
        f"| teacher | {teacher_layers} | {interval(sts['teacher'])} | 100% | {interval(sst['teacher'])} | 1.00x | 1 |"
    )
    for k, record in records.items():
        print(row(f"student layers:{k} ({record['student']})", record))
    if args.retime:
        retime(teacher, {k: work / f"student-{k}" for k in records})
    if args.skip_concat:
        return
    concat = work / "concat_last4.json"
    concat.write_text(
        json.dumps({"schema_version": 1, "layers": [-4, -3, -2, -1], "mixer": "concat", "pooler": "mean"})
    )
    record = distil(concat, "layers:3", texts, work / "student-concat", args.epochs, args.train_precision)
    print("\nmean/concat_last4 (1,536 wide) -> plain 3-layer student + projection:")
    print(
        f"| teacher mean/concat_last4 | 6 | {interval(record['evaluation'][0]['teacher'])} | 100% | "
        f"{interval(record['evaluation'][1]['teacher'])} | 1.00x | 1 |"
    )
    print(row(f"student ({record['student']})", record))
    serve_the_student(work / "student-concat", texts)


def serve_the_student(student: Path, texts: Path) -> None:
    """The plain student exports (sentence-transformers, ONNX) and serves; each checked against bertlens."""
    import socket
    import time

    import httpx
    import numpy as np

    from bertlens.embedding.embedder import Embedder
    from bertlens.representation.recipe import Recipe

    recipe = student / "recipe.json"
    for fmt in ("sentence-transformers", "onnx"):
        out = student.parent / f"student-concat-{fmt}"
        if not (out / "model.onnx").is_file() and not (out / "modules.json").is_file():
            bertlens("export", "--format", fmt, "--recipe", str(recipe), "--texts", str(texts), "--out", str(out))
        record = out / ("export.json" if fmt == "onnx" else "bertlens-export.json")
        print(f"export {fmt}: parity {json.loads(record.read_text())['parity']}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "bertlens", "serve", "--recipe", str(recipe), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        sample = texts.read_text(encoding="utf-8").splitlines()[:16]
        reply = httpx.post(f"http://127.0.0.1:{port}/v1/embeddings", json={"input": sample, "encoding_format": "float"})
        served = np.array([d["embedding"] for d in reply.json()["data"]])
        local = Embedder(Recipe.load(recipe)).encode(sample)
        print(
            f"served by `bertlens serve`: {served.shape}, max abs diff to bertlens {np.abs(served - local).max():.1e}"
        )
    finally:
        server.terminate()
        server.wait(timeout=60)


def retime(teacher: Path, students: dict[str, Path]) -> None:
    """Teacher and students timed in one alternated run (1,000 STS-B sentences) at the teacher's resolved precision:
    students distilled before their recipes took the teacher's precision were timed at fp32 against a bf16 teacher."""
    from bertlens.embedding.embedder import Embedder
    from bertlens.embedding.speed import texts_per_second
    from bertlens.representation.recipe import Recipe
    from common import sts_sentences

    first = Embedder(Recipe.load(teacher))
    precision = first.recipe.precision
    others = [Embedder(Recipe.load(d / "recipe.json").replace(precision=precision)) for d in students.values()]
    speeds = texts_per_second([first, *others], sts_sentences()[:1000])
    print(
        f"\nretimed at {precision}: teacher {speeds[0]:.1f} texts/s; "
        + "; ".join(
            f"student {k}: {s:.1f} texts/s ({s / speeds[0]:.2f}x)" for k, s in zip(students, speeds[1:], strict=True)
        )
    )


if __name__ == "__main__":
    main()
