"""E8: does domain-adaptive pre-training help, in-domain more than off-domain? (issue #13)

Usage: python bench/e8_domain_adaptation.py [--out out/e8] [--epochs 1]

On tiny-raw-bert, with the same seed and equal token budgets:
  (a) no adaptation; (b) DAPT on movie reviews (in-domain for SST-2 and MR; the last 100 reviews
  are held out and never trained on); (c) DAPT on State of the Union addresses (off-domain control;
  the last 5 addresses held out). For each model: held-out masked-LM loss on review text and on
  speech text (`bertlens domain --texts REVIEWS --reference SPEECHES`), `bertlens domain` on SST-2
  texts, the best frozen probe on SST-2 and MR (`bertlens sweep`), and full fine-tuning at n=1000 on
  SST-2 over 3 seeds (`bertlens compare`). Every step is a bertlens command, printed as it runs.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from common import DATA, REPO

RAW = DATA.parent / "models" / "tiny-raw-bert"


def bertlens(*args: str) -> None:
    command = [sys.executable, "-m", "bertlens", *args, "--quiet"]
    print("$ bertlens " + " ".join(args), flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def prepare(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    with open(DATA / "movie_reviews" / "reviews.jsonl", encoding="utf-8") as handle:
        reviews = [json.loads(line)["text"].replace("\n", " ") for line in handle]
    (work / "reviews_train.txt").write_text("\n".join(reviews[:-100]) + "\n")
    (work / "reviews_heldout.txt").write_text("\n".join(reviews[-100:]) + "\n")
    addresses = re.split(
        r"\n\s*\n(?=[A-Z][A-Z .'’,]+\n)", (DATA / "raw" / "state_union.txt").read_text(encoding="utf-8")
    )
    lines = [[ln.strip() for ln in a.splitlines() if len(ln.split()) >= 5] for a in addresses]
    (work / "speech_train.txt").write_text("\n".join(ln for a in lines[:-5] for ln in a) + "\n")
    (work / "speech_heldout.txt").write_text("\n".join(ln for a in lines[-5:] for ln in a) + "\n")
    with open(DATA / "sst2" / "train.txt", encoding="utf-8") as handle:
        sst2 = [line.split(" ", 1)[1].strip() for line, _ in zip(handle, range(2000), strict=False)]
    (work / "sst2_texts.txt").write_text("\n".join(sst2) + "\n")


def token_count(path: Path) -> int:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(RAW)
    texts = [t for t in path.read_text(encoding="utf-8").splitlines() if t.strip()]
    return sum(len(ids) + 1 for ids in tokenizer(texts, add_special_tokens=False)["input_ids"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=REPO / "out" / "e8")
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    work, cache = args.out, args.out / "cache"
    prepare(work)
    budget = min(token_count(work / "reviews_train.txt"), token_count(work / "speech_train.txt"))
    print(f"token budget per adaptation: {budget:,} word pieces, {args.epochs} epoch(s)", flush=True)
    models = {"(a) none": str(RAW)}
    for name, corpus in (("(b) DAPT reviews", "reviews_train.txt"), ("(c) DAPT speeches", "speech_train.txt")):
        out = work / ("dapt-" + corpus.split("_")[0])
        bertlens(
            "pretrain",
            "--from",
            str(RAW),
            "--texts",
            str(work / corpus),
            "--max-tokens",
            str(budget),
            "--epochs",
            str(args.epochs),
            "--max-length",
            "128",
            "--batch-size",
            "32",
            "--out",
            str(out),
            "--cache-dir",
            str(cache),
        )
        models[name] = str(out)
    rows = []
    for name, model in models.items():
        tag = Path(model).name
        bertlens(
            "domain",
            "--texts",
            str(work / "reviews_heldout.txt"),
            "--reference",
            str(work / "speech_heldout.txt"),
            "--model",
            model,
            "--samples",
            "300",
            "--out",
            str(work / f"loss-{tag}"),
        )
        bertlens(
            "domain",
            "--texts",
            str(work / "sst2_texts.txt"),
            "--model",
            model,
            "--samples",
            "300",
            "--out",
            str(work / f"domain-sst2-{tag}"),
            "--data-dir",
            str(DATA),
        )
        for task in ("sst2", "mr"):
            bertlens(
                "sweep",
                "--task",
                task,
                "--model",
                model,
                "--data-dir",
                str(DATA),
                "--out",
                str(work / f"sweep-{task}-{tag}"),
                "--cache-dir",
                str(cache),
            )
        bertlens(
            "compare",
            "--task",
            "sst2",
            "--model",
            model,
            "--data-dir",
            str(DATA),
            "--sizes",
            "1000",
            "--strategies",
            "full",
            "--seeds",
            "3",
            "--frozen-sizes",
            "",
            "--drift-task",
            "none",
            "--out",
            str(work / f"compare-{tag}"),
        )
        loss = json.loads((work / f"loss-{tag}" / "results.json").read_text())
        sst = json.loads((work / f"domain-sst2-{tag}" / "results.json").read_text())
        sweeps = {t: json.loads((work / f"sweep-{t}-{tag}" / "results.json").read_text()) for t in ("sst2", "mr")}
        curve = json.loads((work / f"compare-{tag}" / "results.json").read_text())["curve"][0]
        probe = {}
        for task, data in sweeps.items():
            row = next(r for r in data["rows"] if r["candidate"] == data["recommended"] and r["protocol"] == "probe")
            probe[task] = f"{100 * row['value']:.1f} [{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]"
        rows.append(
            [
                name,
                f"{loss['user_loss']['mean']:.3f} [{loss['user_loss']['low']:.3f}, {loss['user_loss']['high']:.3f}]",
                f"{loss['ref_loss']['mean']:.3f} [{loss['ref_loss']['low']:.3f}, {loss['ref_loss']['high']:.3f}]",
                f"{sst['user_loss']['mean']:.3f} vs {sst['ref_loss']['mean']:.3f} ({'adapt' if sst['adapt'] else 'no'})",
                probe["sst2"],
                probe["mr"],
                f"{100 * curve['mean']:.1f} [{100 * curve['low']:.1f}, {100 * curve['high']:.1f}]",
            ]
        )
    print(
        "| model | held-out MLM loss, reviews | held-out MLM loss, speeches | domain on SST-2 (loss vs UD EWT) "
        "| SST-2 frozen probe | MR frozen probe (cv10) | SST-2 full fine-tune, n=1000, 3 seeds |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
