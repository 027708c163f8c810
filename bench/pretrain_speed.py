"""Masked-LM training speed: `bertlens pretrain`'s loop vs a plain Hugging Face loop, same run, same settings.

Usage: python bench/pretrain_speed.py [--model DIR] [--steps 30] [--batch-size 32] [--max-length 128]
                                     [--precision fp32|bf16]

Baseline: `AutoModelForMaskedLM` + the transformers whole-word-masking collator
(`DataCollatorForLanguageModeling(whole_word_mask=True)`) + a plain PyTorch loop (AdamW), on
padded batches of the documents cut at --max-length. bertlens: the same model, batch size,
sequence length, precision (--precision; bf16 = autocast around the forward pass in both),
optimizer and learning rate, through `fine_tune` with the MaskedLM objective on packed rows,
logits at masked positions only. Each pipeline runs in its own process (peak RSS is that
process's), twice, alternating; the median speed is reported. Tokens/s counts real
(non-padding) tokens. Two corpora: movie reviews (long documents) and SST-2 sentences (short
texts, where padding costs the most).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from common import DATA

RAW = DATA.parent / "models" / "tiny-raw-bert"


def corpus(name: str, count: int) -> list[str]:
    if name == "reviews":
        with open(DATA / "movie_reviews" / "reviews.jsonl", encoding="utf-8") as handle:
            return [json.loads(line)["text"] for line, _ in zip(handle, range(count), strict=False)]
    with open(DATA / "sst2" / "train.txt", encoding="utf-8") as handle:
        return [line.split(" ", 1)[1].strip() for line, _ in zip(handle, range(count), strict=False)]


def run_hf(model_dir: Path, texts: list[str], steps: int, batch: int, length: int, precision: str) -> dict:
    from transformers import AutoModelForMaskedLM, AutoTokenizer, DataCollatorForLanguageModeling

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForMaskedLM.from_pretrained(model_dir).train()
    collator = DataCollatorForLanguageModeling(tokenizer, whole_word_mask=True, mlm_probability=0.15, seed=0)
    # offsets: the collator finds whole words from them
    encoded = [tokenizer(t, truncation=True, max_length=length, return_offsets_mapping=True) for t in texts]
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    tokens, start = 0, time.perf_counter()
    for step in range(steps):
        rows = [encoded[(step * batch + i) % len(encoded)] for i in range(batch)]
        padded = tokenizer.pad(
            [{k: r[k] for k in ("input_ids", "attention_mask", "token_type_ids")} for r in rows], return_tensors="pt"
        )  # padded to the longest row of the batch
        width = padded["input_ids"].shape[1]
        offsets = np.zeros((len(rows), width, 2), dtype=np.int64)  # [B, T, 2]: the collator's word cues
        for i, r in enumerate(rows):
            offsets[i, : len(r["offset_mapping"])] = r["offset_mapping"]
        special = torch.tensor(
            [
                tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
                for ids in padded["input_ids"].tolist()
            ],
            dtype=torch.bool,
        )  # [B, T], padding included
        masked, labels = collator.torch_mask_tokens(
            padded["input_ids"], special_tokens_mask=special, offset_mapping=offsets
        )
        inputs = {**padded, "input_ids": masked, "labels": labels}
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = model(**inputs).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        tokens += int(inputs["attention_mask"].sum())
    return {"tokens_per_s": tokens / (time.perf_counter() - start), "loss": float(loss)}


def run_bertlens(model_dir: Path, texts: list[str], steps: int, batch: int, length: int, precision: str) -> dict:
    import tempfile

    from bertlens.encoding.encoder import Encoder
    from bertlens.encoding.token_stream import StreamRows, build_token_stream
    from bertlens.training.config import TrainConfig
    from bertlens.training.loop import fine_tune
    from bertlens.training.mlm_head import mlm_head
    from bertlens.training.objectives import MaskedLM
    from bertlens.training.strategies import parse_strategy

    encoder = Encoder(str(model_dir), max_length=length)
    head, _ = mlm_head(encoder.model, model_dir)
    tok = encoder.tokenizer
    with tempfile.TemporaryDirectory() as cache:
        stream = build_token_stream(texts, tok, encoder.ref.fingerprint, "bench", Path(cache))
        rows = StreamRows(stream, length, tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)
        rows = rows.part(np.arange(min(len(rows), steps * batch)))
        objective = MaskedLM(encoder, head, rows, None)
        config = TrainConfig(
            lr=5e-5,
            head_lr=5e-5,
            epochs=1,
            min_steps=0,
            batch_size=batch,
            warmup=0.0,
            weight_decay=0.0,
            patience=10**6,
            checkpoint_every=10**9,
            precision=precision,
        )
        start = time.perf_counter()
        result = fine_tune(encoder, objective, parse_strategy("full", encoder.num_layers), config)
        seconds = time.perf_counter() - start
        real = sum(int(rows.take(np.arange(i, min(i + 256, len(rows))))[3].sum()) for i in range(0, len(rows), 256))
    return {"tokens_per_s": real / seconds, "loss": result.last_loss, "steps": result.steps}


def worker(args) -> None:
    texts = corpus(args.corpus, args.documents)
    fn = run_hf if args.pipeline == "hf" else run_bertlens
    out = fn(Path(args.model), texts, args.steps, args.batch_size, args.max_length, args.precision)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=str(RAW))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--pipeline", choices=("hf", "bertlens"))
    parser.add_argument("--corpus", choices=("reviews", "sst2"), default="reviews")
    parser.add_argument("--documents", type=int, default=1000)
    args = parser.parse_args()
    if args.pipeline:
        worker(args)
        return
    print(
        f"model {Path(args.model).name}, batch {args.batch_size} x {args.max_length} tokens, {args.steps} steps, "
        f"{args.precision}, "
        f"torch threads={torch.get_num_threads()}"
    )
    print("| corpus | pipeline | tokens/s (median of 2) | ratio to HF | peak RSS MB |")
    print("|---|---|---|---|---|")
    for name in ("reviews", "sst2"):
        runs: dict[str, list[dict]] = {"hf": [], "bertlens": []}
        for _ in range(2):
            for pipeline in ("hf", "bertlens"):
                command = [
                    sys.executable,
                    __file__,
                    "--pipeline",
                    pipeline,
                    "--corpus",
                    name,
                    "--model",
                    args.model,
                    "--steps",
                    str(args.steps),
                    "--batch-size",
                    str(args.batch_size),
                    "--max-length",
                    str(args.max_length),
                    "--precision",
                    args.precision,
                    "--documents",
                    str(args.documents if name == "reviews" else 20000),
                ]
                done = subprocess.run(command, capture_output=True, text=True, check=True)
                runs[pipeline].append(json.loads(done.stdout.split("RESULT ", 1)[1]))
        base = float(np.median([r["tokens_per_s"] for r in runs["hf"]]))
        for pipeline, label in (("hf", "Hugging Face MLM loop (baseline)"), ("bertlens", "bertlens pretrain loop")):
            speed = float(np.median([r["tokens_per_s"] for r in runs[pipeline]]))
            peak = max(r["peak_rss_mb"] for r in runs[pipeline])
            print(f"| {name} | {label} | {speed:,.0f} | {speed / base:.2f}x | {peak:,.0f} |")


if __name__ == "__main__":
    main()
