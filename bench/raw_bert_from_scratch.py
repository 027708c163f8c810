"""A stronger small raw BERT, trained from scratch with `bertlens pretrain --scratch` in under 2 hours on 2 cores.

Usage: python bench/raw_bert_from_scratch.py [--out out/scratch] [--epochs 6] [--step prepare|train|evaluate|all]

The recipe (issue #13), every step a bertlens command printed as it runs:
  corpus    every training text under $BERTLENS_DATA, never a test split: SST-2 train, MR, SUBJ,
            TREC train, STS-B train (both sides), the long movie reviews except the last 100,
            State of the Union addresses, UD EWT train sentences (one document a line);
  held out  the last 100 movie reviews and the UD EWT dev sentences (never trained on);
  model     `--scratch small` (6 layers x 256, 4 heads, FFN 1024) with the bert-base-uncased word
            pieces of tiny-raw-bert, so the masked-LM losses of the two models are comparable;
  training  whole-word masking, rows of 128 packed across documents, batch 32, AdamW lr 5e-4
            (head too), 5% warmup then linear decay, bf16 autocast, --epochs passes, seed 0.
Evaluation: held-out masked-LM loss of the new model and of tiny-raw-bert on the same texts with the
same masks (`bertlens domain`), STS-B last-layer mean and [CLS] (`bertlens sweep`), and UPOS by
layer (`bertlens probe`-style linguistic suite). Weights are not committed: rebuild them with this.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
from pathlib import Path

from common import DATA, REPO

RAW = DATA.parent / "models" / "tiny-raw-bert"


def bertlens(*args: str, log: Path | None = None) -> None:
    print("$ bertlens " + " ".join(args), flush=True)
    command = [sys.executable, "-m", "bertlens", *args]
    if log is None:
        subprocess.run([*command, "--quiet"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return
    with open(log, "a", encoding="utf-8") as handle:
        subprocess.run(command, check=True, stdout=handle, stderr=subprocess.STDOUT)


def labelled_lines(path: Path) -> list[str]:
    """`LABEL text` lines (SST-2, MR, SUBJ, TREC) -> the texts."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return [line.split(" ", 1)[1].strip() for line in handle if " " in line.strip()]


def conllu_sentences(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [line[len("# text = ") :].strip() for line in handle if line.startswith("# text = ")]


def prepare(work: Path) -> dict[str, int]:
    """Write corpus.txt (training documents, one a line) and the two held-out files; returns counts."""
    work.mkdir(parents=True, exist_ok=True)
    with open(DATA / "movie_reviews" / "reviews.jsonl", encoding="utf-8") as handle:
        reviews = [json.loads(line)["text"].replace("\n", " ") for line in handle]
    with open(DATA / "stsb" / "train.csv", newline="", encoding="utf-8") as handle:
        sts = [text for row in csv.reader(handle) for text in row[:2]]
    speech = (DATA / "raw" / "state_union.txt").read_text(encoding="utf-8")
    addresses = [" ".join(part.split()) for part in re.split(r"\n\s*\n", speech) if part.strip()]
    sources = {
        "sst2 train": labelled_lines(DATA / "sst2" / "train.txt"),
        "mr": labelled_lines(DATA / "mr" / "rt-polarity.all"),
        "subj": labelled_lines(DATA / "subj" / "subj.all"),
        "trec train": labelled_lines(DATA / "trec" / "train.txt"),
        "stsb train": sts,
        "movie reviews (all but the last 100)": reviews[:-100],
        "state_union": addresses,
        "ud-ewt train": conllu_sentences(DATA / "ud-ewt" / "train.conllu"),
    }
    with open(work / "corpus.txt", "w", encoding="utf-8") as handle:
        for texts in sources.values():
            handle.writelines(t + "\n" for t in texts if t.strip())
    (work / "heldout_reviews.txt").write_text("\n".join(reviews[-100:]) + "\n", encoding="utf-8")
    (work / "heldout_general.txt").write_text(
        "\n".join(conllu_sentences(DATA / "ud-ewt" / "dev.conllu")) + "\n", encoding="utf-8"
    )
    counts = {name: len(texts) for name, texts in sources.items()}
    print("corpus documents: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()), flush=True)
    return counts


def train(work: Path, epochs: int) -> None:
    bertlens(
        "pretrain",
        "--scratch",
        "small",
        "--tokenizer",
        str(RAW),
        "--texts",
        str(work / "corpus.txt"),
        "--max-length",
        "128",
        "--epochs",
        str(epochs),
        "--batch-size",
        "32",
        "--lr",
        "5e-4",
        "--head-lr",
        "5e-4",
        "--warmup",
        "0.05",
        "--train-precision",
        "bf16",
        "--checkpoint-every",
        "500",
        "--cache-dir",
        str(work / "cache"),
        "--seed",
        "0",
        "--out",
        str(work / "small-raw-bert"),
        log=work / "train.log",
    )


def evaluate(work: Path) -> None:
    """Held-out loss of both models (same texts, same masks), STS-B last layer, UPOS by layer; a summary table."""
    models = {"small-raw-bert (this recipe)": work / "small-raw-bert", "tiny-raw-bert": RAW}
    losses = {}
    for name, model in models.items():
        out = work / f"domain-{model.name}"
        if not (out / "results.json").is_file():
            bertlens(
                "domain",
                "--texts",
                str(work / "heldout_reviews.txt"),
                "--reference",
                str(work / "heldout_general.txt"),
                "--samples",
                "500",
                "--model",
                str(model),
                "--out",
                str(out),
            )
        losses[name] = json.loads((out / "results.json").read_text())
    model = work / "small-raw-bert"
    if not (work / "sweep-stsb" / "results.json").is_file():
        bertlens(
            "sweep", "--task", "stsb", "--protocols", "cosine", "--model", str(model), "--out", str(work / "sweep-stsb")
        )
    if not (work / "probe-upos" / "results.json").is_file():
        bertlens(
            "probe",
            "--suite",
            "linguistic",
            "--tasks",
            "upos",
            "--model",
            str(model),
            "--out",
            str(work / "probe-upos"),
        )
    training = json.loads((model / "training.json").read_text())
    print(
        f"\ntraining: {training['steps']} steps, {training['tokens']:,} tokens in the corpus, {training['seconds']:.0f} s"
    )
    print(
        "held-out masked-LM loss by epoch (the run's own held-out rows): "
        + ", ".join(f"{x:.3f}" for x in training["heldout_loss_by_epoch"])
    )
    print("\n| model | held-out movie reviews: MLM loss [95% CI] | held-out UD EWT dev: MLM loss [95% CI] |")
    print("|---|---|---|")
    for name, result in losses.items():
        u, r = result["user_loss"], result["ref_loss"]
        print(
            f"| {name} | {u['mean']:.3f} [{u['low']:.3f}, {u['high']:.3f}] | {r['mean']:.3f} [{r['low']:.3f}, {r['high']:.3f}] |"
        )
    rows = json.loads((work / "sweep-stsb" / "results.json").read_text())["rows"]
    last = {r["candidate"]: r for r in rows if r["protocol"] == "cosine"}
    print(
        "\nSTS-B test cosine Spearman, small-raw-bert: "
        + ", ".join(
            f"{k} {v['value']:.3f} [{v['ci_low']:.3f}, {v['ci_high']:.3f}]"
            for k, v in last.items()
            if k.endswith("/L6") and k.split("/")[0] in ("cls", "mean")
        )
    )
    upos = json.loads((work / "probe-upos" / "results.json").read_text())["tasks"]["upos"]["result"]
    layers = range(len(upos["accuracy"]))
    print("\n| small-raw-bert | " + " | ".join(f"L{k}" for k in layers) + " |")
    print("|---|" + "---|" * len(upos["accuracy"]))
    print("| upos | " + " | ".join(f"{100 * a:.1f}" for a in upos["accuracy"]) + " |")
    print("| upos selectivity | " + " | ".join(f"{100 * a:.1f}" for a in upos["selectivity"]) + " |")


def plot_loss(work: Path, path: Path) -> Path:
    """Training loss per step (and a moving mean) with the held-out loss after each epoch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    record = json.loads((work / "small-raw-bert" / "training.json").read_text())
    loss = np.array(record["loss_curve"])
    per_epoch = record["steps"] // len(record["heldout_loss_by_epoch"])
    smooth = np.convolve(loss, np.ones(50) / 50, mode="valid")
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(loss, color="#cccccc", lw=0.5, label="training loss (per step)")
    ax.plot(np.arange(49, len(loss)), smooth, color="#1f77b4", lw=1.2, label="training loss (50-step mean)")
    epochs = [(i + 1) * per_epoch for i in range(len(record["heldout_loss_by_epoch"]))]
    ax.plot(epochs, record["heldout_loss_by_epoch"], "o-", color="#d62728", label="held-out rows, after each epoch")
    ax.set_ylim(5.0, 9.0)
    ax.set_xlabel("optimiser step (batch 32 x 128 tokens)")
    ax.set_ylabel("masked-LM loss (nats)")
    ax.set_title(
        f"small-raw-bert from scratch: {record['steps']} steps, {record['seconds'] / 60:.0f} min on 2 cores", fontsize=9
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=REPO / "out" / "scratch")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--step", choices=("prepare", "train", "evaluate", "all"), default="all")
    args = parser.parse_args()
    if args.step in ("prepare", "all"):
        prepare(args.out)
    if args.step in ("train", "all"):
        train(args.out, args.epochs)
    if args.step in ("evaluate", "all"):
        evaluate(args.out)
        print(f"loss curve: {plot_loss(args.out, args.out / 'loss_curve.png')}")


if __name__ == "__main__":
    main()
