"""`bertlens geometry` as a library call: one pass over a corpus, then every anisotropy diagnostic
per layer and pooler (the maths lives in metrics/geometry.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bertlens.encoding.encoder import Encoder
from bertlens.features.layers import pool_layers
from bertlens.metrics.geometry import (
    alignment,
    intra_sentence_similarity,
    mean_pair_cosine,
    random_pairs,
    rogue_dimensions,
    self_similarity,
    uniformity,
    variance_explained,
)
from bertlens.progress import Progress, silent
from bertlens.tasks.kinds import SCORE
from bertlens.tasks.loaders import TaskData

POSITIVE_SHARE = 0.8  # similarity pairs scored >= 80% of the maximum (STS-B: >= 4 of 5) count as positives


def positive_pairs(task: TaskData | None, texts: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """Indices (a, b) into `texts` of a similarity task's high-scoring pairs (for alignment), or None."""
    if task is None or task.kind.target != SCORE:
        return None
    index = {t: i for i, t in enumerate(texts)}
    a, b = [], []
    top = max(float(split.targets.max()) for split in task.splits.values())
    for split in task.splits.values():
        for x, y, score in zip(split.texts_a, split.texts_b, split.targets):
            if score >= POSITIVE_SHARE * top and x in index and y in index:
                a.append(index[x])
                b.append(index[y])
    return (np.array(a), np.array(b)) if a else None


@dataclass(frozen=True)
class Collected:
    """What one encoder pass gathers: sentence vectors per layer x pooler and sampled token vectors per layer."""

    sentences: dict[str, np.ndarray]  # pooler -> [L+1, N, H]
    tokens: np.ndarray  # [L+1, M, H]
    token_ids: np.ndarray  # [M] word-piece id (the word type)
    token_sentence: np.ndarray  # [M] which text it came from


def collect(
    encoder: Encoder,
    texts: list[str],
    poolers: tuple[str, ...],
    *,
    max_tokens_per_text: int = 32,
    seed: int = 0,
    progress: Progress = silent,
) -> Collected:
    """One pass: pooled vectors of every layer for each pooler, and up to `max_tokens_per_text` tokens a text."""
    rng = np.random.default_rng(seed)
    layers, width = encoder.num_layers + 1, encoder.hidden_size
    sentences = {p: np.zeros((layers, len(texts), width), dtype=np.float32) for p in poolers}
    tokens, token_ids, token_sentence = [], [], []
    tokenized = encoder.tokenize(texts)
    for states in encoder.stream(tokenized, progress):
        rows = states.doc_index.numpy()
        for name, pooled in zip(poolers, pool_layers(states, poolers)):
            sentences[name][:, rows] = pooled.float().numpy()  # [L+1, B, H]
        content = (states.attention_mask & ~states.special_tokens_mask).numpy()  # [B, T]
        for b, row in enumerate(rows):
            positions = np.flatnonzero(content[b])
            if len(positions) > max_tokens_per_text:
                positions = np.sort(rng.choice(positions, max_tokens_per_text, replace=False))
            tokens.append(states.hidden[:, b, positions].float().numpy())  # [L+1, m, H]
            token_ids.append(np.asarray(tokenized.input_ids[row])[positions])
            token_sentence.append(np.full(len(positions), row))
    return Collected(
        sentences, np.concatenate(tokens, axis=1), np.concatenate(token_ids), np.concatenate(token_sentence)
    )


def layer_diagnostics(
    collected: Collected, *, pairs: int = 5000, seed: int = 0, positives: tuple[np.ndarray, np.ndarray] | None = None
) -> list[dict]:
    """One row per (layer, pooler) with every diagnostic; token diagnostics repeat per pooler (they are per layer).

    positives: indices (a, b) into the texts forming positive pairs, for alignment.
    """
    rng = np.random.default_rng(seed)
    layers = collected.tokens.shape[0]
    n = next(iter(collected.sentences.values())).shape[1]
    si, sj = random_pairs(n, pairs, rng)
    ti, tj = random_pairs(len(collected.token_ids), pairs, rng, groups=collected.token_sentence)
    rows = []
    for layer in range(layers):
        tokens = collected.tokens[layer]
        token_cos = mean_pair_cosine(tokens, ti, tj)
        self_sim = self_similarity(tokens, collected.token_ids, collected.token_sentence, np.random.default_rng(seed))
        intra = intra_sentence_similarity(tokens, collected.token_sentence)
        for pooler, vectors in collected.sentences.items():
            x = vectors[layer]
            row = {
                "layer": layer,
                "pooler": pooler,
                "sentence_cosine": mean_pair_cosine(x, si, sj),
                "token_cosine": token_cos,
                "self_similarity": self_sim,
                "self_similarity_adjusted": self_sim - token_cos,
                "intra_sentence": intra,
                "intra_sentence_adjusted": intra - token_cos,
                "variance_top1": variance_explained(x, 1),
                "variance_top10": variance_explained(x, 10),
                "rogue_dimensions": rogue_dimensions(x, si, sj),
                "uniformity": uniformity(x, si, sj),
            }
            if positives is not None:
                row["alignment"] = alignment(x[positives[0]], x[positives[1]])
            rows.append(row)
    return rows
