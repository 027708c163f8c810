"""`bertlens domain` as a library call: is the user's text far from what the model was trained on?

Two measurements, each on the user's texts and on a reference corpus of general English:
- tokenizer fit: word pieces per word (fertility), the share of words split into several pieces,
  the unknown-token rate, and the frequent words the vocabulary lacks (split into 3+ pieces);
  words are the tokenizer's own pre-tokenized words;
- the model's own surprise: masked-LM loss per text under fixed, seeded whole-word masks (15%),
  on a seeded sample of each corpus, with bootstrap intervals and the gap's interval. A model
  without a trained masked-LM head cannot be asked, and the tokenizer part is reported alone.
The verdict names its thresholds: adapt (DAPT with `bertlens pretrain`) when the model's loss
on the user's text is clearly higher (gap >= GAP_NATS and its interval above 0), or the text
fragments clearly more (fertility ratio >= FERTILITY_RATIO, or unknown tokens >= UNK_RATE).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.encoding.tokens import pad_ids
from bertlens.progress import Progress, silent
from bertlens.tasks.conllu import find_split_file
from bertlens.training.masking import replacement_ids
from bertlens.training.mlm_head import mlm_head
from bertlens.training.objectives import TokenBatch, masked_token_losses

GAP_NATS = 0.5  # masked-LM loss gap (user - reference) that calls for adaptation
FERTILITY_RATIO = 1.25  # user's pieces per word over the reference's
UNK_RATE = 0.01  # share of unknown tokens


@dataclass(frozen=True)
class TokenizerFit:
    words: int
    pieces: int
    fertility: float  # pieces per word
    split_share: float  # words of 2+ pieces
    unk_rate: float  # unknown pieces / pieces
    fragmented: tuple[tuple[str, int, int], ...]  # (word, count, pieces) of frequent words split into 3+ pieces


@dataclass(frozen=True)
class Surprise:
    texts: int
    mean: float  # mean masked-LM loss per text (nats)
    low: float
    high: float


@dataclass(frozen=True)
class DomainResult:
    model: str
    reference: str
    user: TokenizerFit
    ref: TokenizerFit
    user_loss: Surprise | None
    ref_loss: Surprise | None
    gap: tuple[float, float, float] | None  # (user - reference, low, high)
    adapt: bool
    reasons: tuple[str, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


def tokenizer_fit(tokenizer, texts: list[str], top: int = 15, min_count: int = 3) -> TokenizerFit:
    """Pieces per word and the vocabulary's gaps, over the tokenizer's own words."""
    encoded = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    unk = tokenizer.unk_token_id
    words = pieces = split = unknown = 0
    counts: Counter[str] = Counter()
    sizes: dict[str, int] = {}
    for k, text in enumerate(texts):
        ids, offsets, word_ids = encoded["input_ids"][k], encoded["offset_mapping"][k], encoded.encodings[k].word_ids
        per_word: dict[int, list[int]] = {}
        for position, word in enumerate(word_ids):
            if word is not None:
                per_word.setdefault(word, []).append(position)
        for positions in per_word.values():
            words += 1
            pieces += len(positions)
            split += len(positions) > 1
            unknown += sum(ids[p] == unk for p in positions)
            surface = text[offsets[positions[0]][0] : offsets[positions[-1]][1]]
            counts[surface] += 1
            sizes[surface] = len(positions)
    fragmented = sorted(
        ((w, c, sizes[w]) for w, c in counts.items() if sizes[w] >= 3 and c >= min_count),
        key=lambda item: (-item[1], item[0]),
    )[:top]
    return TokenizerFit(
        words, pieces, pieces / max(words, 1), split / max(words, 1), unknown / max(pieces, 1), tuple(fragmented)
    )


def text_losses(encoder: Encoder, head, texts: list[str], seed: int, batch_size: int = 32) -> np.ndarray:
    """Masked-LM loss of each text [n] under fixed seeded whole-word masks; NaN where nothing was masked.

    Batches of `batch_size` texts in input order (not length-bucketed): the seeded masks then fall on the same
    tokens however many texts there are after them.
    """
    tokenized = encoder.tokenize(texts, word_starts=True)
    random_ids = replacement_ids(encoder.tokenizer)
    generator = torch.Generator().manual_seed(seed)
    out = np.full(len(texts), np.nan)
    encoder.model.eval()
    head.eval()
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            rows = np.arange(start, min(start + batch_size, len(texts)))
            batch = encoder.pad(tokenized, rows)
            real = batch["attention_mask"].bool()  # [B, T]
            words = torch.from_numpy(pad_ids([tokenized.word_starts[r] for r in rows], 0)[0].astype(bool))  # [B, T]
            scored = masked_token_losses(
                encoder,
                head,
                TokenBatch(batch["input_ids"], real & ~batch["special_tokens_mask"], words, real),
                random_ids=random_ids,
                generator=generator,
            )
            if scored is None:
                continue
            losses, row = scored  # [M], [M]: which text each masked position belongs to
            totals = torch.zeros(len(rows)).index_add_(0, row, losses)
            counts = torch.zeros(len(rows)).index_add_(0, row, torch.ones_like(losses))
            with np.errstate(invalid="ignore"):
                out[rows] = (totals / counts).numpy()
    return out


def _interval(values: np.ndarray, draws: np.ndarray) -> tuple[float, float, float]:
    means = values[draws].mean(axis=1)  # [B]
    return float(values.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def compare_surprise(user: np.ndarray, ref: np.ndarray, seed: int, resamples: int = 1000):
    """Bootstrap intervals of each corpus's mean loss and of the gap (independent samples, resampled apart)."""
    user, ref = user[np.isfinite(user)], ref[np.isfinite(ref)]
    rng = np.random.default_rng(seed)
    du = rng.integers(0, len(user), (resamples, len(user)))
    dr = rng.integers(0, len(ref), (resamples, len(ref)))
    gaps = user[du].mean(axis=1) - ref[dr].mean(axis=1)
    gap = (float(user.mean() - ref.mean()), float(np.percentile(gaps, 2.5)), float(np.percentile(gaps, 97.5)))
    return Surprise(len(user), *_interval(user, du)), Surprise(len(ref), *_interval(ref, dr)), gap


def sample(texts: list[str], count: int, seed: int) -> list[str]:
    if len(texts) <= count:
        return list(texts)
    return [texts[i] for i in np.sort(np.random.default_rng(seed).choice(len(texts), count, replace=False))]


def measure_domain(
    encoder: Encoder,
    user_texts: list[str],
    ref_texts: list[str],
    reference: str,
    *,
    samples: int = 500,
    seed: int = 0,
    progress: Progress = silent,
) -> DomainResult:
    progress("tokenizer fit", 0, 2)
    user_fit = tokenizer_fit(encoder.tokenizer, sample(user_texts, 20_000, seed))
    ref_fit = tokenizer_fit(encoder.tokenizer, sample(ref_texts, 20_000, seed))
    notes, reasons = [], []
    head, origin = mlm_head(encoder.model, encoder.ref.path)
    user_loss = ref_loss = gap = None
    if origin.loaded:
        progress("masked-LM loss", 1, 2)
        losses = [text_losses(encoder, head, sample(texts, samples, seed), seed) for texts in (user_texts, ref_texts)]
        user_loss, ref_loss, gap = compare_surprise(*losses, seed=seed)
        if gap[0] >= GAP_NATS and gap[1] > 0:
            reasons.append(
                f"masked-LM loss on your text is {gap[0]:.2f} nats above the reference "
                f"(interval {gap[1]:.2f} to {gap[2]:.2f}; threshold {GAP_NATS})"
            )
    else:
        notes.append(
            "the model has no trained masked-LM head (e.g. a sentence-transformers model), so its surprise at "
            "your text cannot be measured; the verdict rests on the tokenizer alone"
        )
    ratio = user_fit.fertility / max(ref_fit.fertility, 1e-9)
    if ratio >= FERTILITY_RATIO:
        reasons.append(
            f"your text needs {ratio:.2f}x the word pieces per word of the reference (threshold {FERTILITY_RATIO}x)"
        )
    if user_fit.unk_rate >= UNK_RATE:
        reasons.append(
            f"{100 * user_fit.unk_rate:.1f}% of your word pieces are unknown tokens (threshold {100 * UNK_RATE:.0f}%)"
        )
    progress("done", 2, 2)
    return DomainResult(
        encoder.ref.name,
        reference,
        user_fit,
        ref_fit,
        user_loss,
        ref_loss,
        gap,
        bool(reasons),
        tuple(reasons),
        tuple(notes),
    )


def default_reference(data: Path) -> tuple[list[str], str]:
    """General English web text: the UD EWT training sentences under `data` (the shared data folder)."""
    from bertlens.tasks.conllu import read_conllu

    path = find_split_file(data / "ud-ewt", "train")
    return [s.text for s in read_conllu(path) if s.text.strip()], f"UD EWT training sentences ({path})"
