"""What a full sweep costs compared with one plain embedding pass, and batched vs one-by-one probes.

Usage: python bench/sweep_cost.py [--task sst2] [--sklearn-candidates N]
       python bench/sweep_cost.py --user-pairs 5000

--user-pairs N: a user similarity CSV (the first N STS-B training pairs, no splits, so 10-fold
cross-validation), each command in a fresh process with its peak RSS: `bertlens embed` of its
texts (baseline), `bertlens sweep` with the default protocols (cosine under CV) and with
`--protocols cosine,probe` (the k-fold ridge probe too). Target: sweep / embed <= 1.5.

1. Baseline: `bertlens embed` (mean pooling, default model, fp32) over the task's texts.
   Sweep: `run_sweep` on the same texts with an empty cache: the bank (every layer x cls,
   mean, max, attention + max-pooled mixes) and every probe, bootstrap included.
   Target: sweep / embed <= 1.5 (re-encoding per candidate would be about (L+1) x 4 x).
2. The batched logistic probes (all candidates x C grid in one model) vs one scikit-learn
   LogisticRegression per candidate and C, with the same dev selection. Target >= 10x faster,
   test accuracy within 0.5 points per candidate.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.job import run_embed
from bertlens.encoding.encoder import Encoder
from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.experiments.sweep.context import SweepContext, examples, sweep_folds, width_groups
from bertlens.features.bank import build_bank
from bertlens.io.tables import TableSpec
from bertlens.probing.candidates import enumerate_candidates
from bertlens.probing.logistic import fit_logistic
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import load_catalog_task
from common import DATA, run_measured, timed


def batched_probes(ctx: SweepContext, candidates, fold, strengths) -> tuple[np.ndarray, np.ndarray, float]:
    """The sweep's batched probe: test accuracy per (candidate, C) [C, R] and after dev selection [C]."""
    ex = ctx.ex
    per_c = np.zeros((len(candidates), len(strengths)))
    selected = np.zeros(len(candidates))
    y_train, y_dev, y_test = (ex.targets[r] for r in (fold.train, fold.dev, fold.test))

    def work():
        for ids in width_groups(candidates, ctx.bank.width).values():
            fit = fit_logistic(ctx.stack(candidates, ids, fold.train), y_train, strengths)
            dev = (fit.predict(ctx.stack(candidates, ids, fold.dev)).numpy() == y_dev).mean(-1)
            test = (fit.predict(ctx.stack(candidates, ids, fold.test)).numpy() == y_test).mean(-1)
            per_c[ids] = test
            selected[ids] = test[np.arange(len(ids)), dev.argmax(1)]

    _, seconds = timed(work)
    return per_c, selected, seconds


def sklearn_probes(ctx: SweepContext, candidates, fold, strengths) -> tuple[np.ndarray, np.ndarray, float]:
    """One LogisticRegression per (candidate, C) on standardised features; C chosen on dev."""
    ex = ctx.ex
    per_c = np.zeros((len(candidates), len(strengths)))
    accuracies = np.zeros(len(candidates))
    y_train, y_dev, y_test = (ex.targets[r] for r in (fold.train, fold.dev, fold.test))

    def work():
        for i in range(len(candidates)):
            train, dev, test = (ctx.stack(candidates, [i], r)[0].numpy() for r in (fold.train, fold.dev, fold.test))
            mean, std = train.mean(0), np.maximum(train.std(0, ddof=1), 1e-6)
            best = -1.0
            for r, c in enumerate(strengths):
                model = LogisticRegression(C=c, max_iter=1000).fit((train - mean) / std, y_train)
                score = (model.predict((dev - mean) / std) == y_dev).mean()
                per_c[i, r] = (model.predict((test - mean) / std) == y_test).mean()
                if score > best:
                    best, accuracies[i] = score, per_c[i, r]

    _, seconds = timed(work)
    return per_c, accuracies, seconds


def user_file_cost(pairs: int) -> None:
    """Sweep vs embed on a user similarity CSV without splits (10-fold CV), each run in its own process."""
    import csv

    with open(DATA / "stsb" / "train.csv", newline="", encoding="utf-8") as handle:
        rows = [row[:3] for row in csv.reader(handle)][:pairs]
    texts = list(dict.fromkeys(t for row in rows for t in row[:2]))
    print(
        f"user file: {len(rows)} STS-B training pairs as a CSV without splits ({len(texts)} distinct texts), "
        f"default model, fp32, 10-fold CV"
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with open(work / "pairs.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["a", "b", "score"])
            writer.writerows(rows)
        (work / "texts.txt").write_text("\n".join(t.replace("\n", " ") for t in texts) + "\n")
        sweep = [
            "sweep",
            "--data",
            str(work / "pairs.csv"),
            "--text-col",
            "a",
            "--text-col2",
            "b",
            "--label-col",
            "score",
            "--quiet",
        ]
        runs = {
            "bertlens embed (baseline)": ["embed", str(work / "texts.txt"), "--out", str(work / "v.npy"), "--quiet"],
            "bertlens sweep (default: cosine under CV)": [
                *sweep,
                "--out",
                str(work / "s1"),
                "--cache-dir",
                str(work / "c1"),
            ],
            "bertlens sweep --protocols cosine,probe": [
                *sweep,
                "--protocols",
                "cosine,probe",
                "--out",
                str(work / "s2"),
                "--cache-dir",
                str(work / "c2"),
            ],
        }
        measured = {name: run_measured(argv) for name, argv in runs.items()}
    base = measured["bertlens embed (baseline)"][0]
    print("| run | wall s | ratio to embed | peak RSS MB |")
    print("|---|---|---|---|")
    for name, (seconds, peak) in measured.items():
        print(f"| {name} | {seconds:.1f} | {seconds / base:.2f}x | {peak:,.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="sst2")
    parser.add_argument("--user-pairs", type=int, default=0, help="measure a user similarity file of N pairs instead")
    parser.add_argument(
        "--sklearn-candidates", type=int, default=0, help="compare only the first N candidates (0 = all)"
    )
    args = parser.parse_args()
    if args.user_pairs:
        user_file_cost(args.user_pairs)
        return
    task = load_catalog_task(get_task(args.task), DATA)
    texts = task.all_texts()
    print(
        f"task {args.task}: {len(texts)} distinct texts, default model (all-MiniLM-L6-v2), fp32, "
        f"torch threads={torch.get_num_threads()}"
    )

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "texts.txt").write_text("\n".join(t.replace("\n", " ") for t in texts) + "\n")
        embedder = Embedder(Recipe())
        embedder.encode(texts[:64])
        _, embed_seconds = timed(lambda: run_embed(TableSpec(work / "texts.txt"), work / "plain.npy", embedder))
        encoder = Encoder("default", attentions="cls")
        encoder.tokenize(texts[:8])
        result, sweep_seconds = timed(lambda: run_sweep(task, encoder, Recipe(), work / "cache", SweepConfig()))
        bank = build_bank(encoder, texts, work / "cache")  # cached now: free
        candidates = enumerate_candidates(bank.num_layers, ("cls", "mean", "max", "attention"))
        config = SweepConfig()
        ex, where = examples(task, {t: i for i, t in enumerate(texts)})
        folds = sweep_folds(task, ex.targets, where, config)
        ctx = SweepContext(task, bank, ex, folds, config, encoder, Recipe(), work / "cache", texts)
        fixed = [c for c in candidates if c.mixer != "scalar_mix"]
        batched_per_c, batched, batched_seconds = batched_probes(ctx, fixed, folds[0], config.strengths)
        compared = fixed[: args.sklearn_candidates or len(fixed)]
        reference_per_c, reference, sklearn_seconds = sklearn_probes(ctx, compared, folds[0], config.strengths)
        per_candidate_batched = batched_seconds / len(fixed)
        per_candidate_sklearn = sklearn_seconds / len(compared)

    print(f"plain bertlens embed pass (baseline): {embed_seconds:.1f} s")
    print(
        f"full sweep ({len(result.protocols['probe'].candidates)} candidates, bank + probes + bootstrap): {sweep_seconds:.1f} s "
        f"(bank {result.timings['bank_seconds']:.1f} s, probes {result.timings['probe_seconds']:.1f} s)"
    )
    print(f"sweep / embed = {sweep_seconds / embed_seconds:.2f}x   (target <= 1.5x)")
    gap = 100 * np.abs(batched_per_c[: len(compared)] - reference_per_c)
    selected_gap = 100 * np.abs(batched[: len(compared)] - reference)
    print(
        f"batched probes: {len(fixed)} candidates x {len(config.strengths)} C in {batched_seconds:.1f} s; "
        f"scikit-learn one by one: {len(compared)} candidates in {sklearn_seconds:.1f} s"
    )
    print(f"speed-up per candidate = {per_candidate_sklearn / per_candidate_batched:.1f}x   (target >= 10x)")
    print(
        f"test accuracy gap vs scikit-learn, same candidate and C: mean {gap.mean():.2f}, max {gap.max():.2f} points "
        "  (target <= 0.5)"
    )
    print(
        f"after each side's own dev choice of C: mean {selected_gap.mean():.2f}, max {selected_gap.max():.2f} points "
        f"(includes C flips where dev scores nearly tie); best candidate: batched {100 * batched[: len(compared)].max():.2f}, "
        f"scikit-learn {100 * reference.max():.2f} (over the {len(compared)} compared)"
    )


if __name__ == "__main__":
    main()
