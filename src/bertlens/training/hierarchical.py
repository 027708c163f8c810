"""Classifiers over a document's sequence of chunk vectors, trained on frozen chunk embeddings.

attention: learned attention over chunks (a_i = softmax_i(w . tanh(W c_i)); doc = sum a_i c_i),
           then a linear layer (the additive attention of Yang et al. 2016, "Hierarchical
           attention networks for document classification")
gru:       a bidirectional GRU over the chunks in order; the mean of its states feeds a
           linear layer (a small hierarchical model in the spirit of Pappagari et al. 2019,
           "Hierarchical transformers for long document classification")
Trained by the one training loop (training/loop.py: AdamW, schedule, early stopping on dev accuracy, seeded) with
`CHUNK_DEFAULTS`, on padded batches of frozen chunk vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from bertlens.io.cache import content_key
from bertlens.representation.logits import logit_loss, logit_width, predict_classes
from bertlens.training.config import TrainConfig
from bertlens.training.loop import fine_tune

HIERARCHICAL = ("attention", "gru")
# a small head on frozen vectors: a head learning rate, long patience-limited training, light decay
CHUNK_DEFAULTS = TrainConfig(
    lr=1e-3, head_lr=1e-3, epochs=40, min_steps=0, batch_size=32, warmup=0.0, weight_decay=0.0, patience=5
)


class ChunkClassifier(nn.Module):
    def __init__(self, kind: str, dim: int, classes: int, hidden: int = 128, dropout: float = 0.1):
        super().__init__()
        self.kind = kind
        self.dropout = nn.Dropout(dropout)
        if kind == "attention":
            self.project = nn.Linear(dim, hidden)
            self.score = nn.Linear(hidden, 1, bias=False)
            width = dim
        else:
            self.gru = nn.GRU(dim, hidden, batch_first=True, bidirectional=True)
            width = 2 * hidden
        self.out = nn.Linear(width, logit_width(classes))

    def forward(self, chunks: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """chunks [B, C, D], mask [B, C] bool -> logits [B, K] (K = 1 for two classes)."""
        chunks = self.dropout(chunks)
        if self.kind == "attention":
            scores = self.score(torch.tanh(self.project(chunks)))[..., 0].masked_fill(~mask, float("-inf"))  # [B, C]
            doc = (torch.softmax(scores, dim=1)[..., None] * chunks).sum(dim=1)  # [B, D]
        else:
            states, _ = self.gru(chunks)  # [B, C, 2h]
            weights = mask.float()[..., None]  # [B, C, 1]
            doc = (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1)  # [B, 2h]
        return self.out(self.dropout(doc))


@dataclass(frozen=True)
class ChunkSequences:
    """Padded chunk vectors per document: vectors [N, C_max, D], mask [N, C_max]."""

    vectors: np.ndarray
    mask: np.ndarray

    @classmethod
    def build(cls, vectors: np.ndarray, doc_index: np.ndarray, order: np.ndarray, documents: int) -> ChunkSequences:
        counts = np.bincount(doc_index, minlength=documents)
        out = np.zeros((documents, counts.max(), vectors.shape[1]), dtype=np.float32)
        mask = np.zeros((documents, counts.max()), dtype=bool)
        out[doc_index, order] = vectors
        mask[doc_index, order] = True
        return cls(out, mask)


@dataclass(frozen=True)
class FittedChunkClassifier:
    model: ChunkClassifier
    mean: torch.Tensor  # [D] chunk standardisation, from the training chunks
    scale: torch.Tensor  # [D]

    def predict(self, data: ChunkSequences, rows: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(data.vectors[rows])
        m = torch.from_numpy(data.mask[rows])
        x = torch.where(m[..., None], (x - self.mean) / self.scale, torch.zeros_like(x))
        return predict_chunks(self.model, x, m)


class ChunkObjective:
    """A chunk classifier on frozen, standardised chunk vectors as an objective of the one training loop:
    cross-entropy on the `train` documents, accuracy on the `dev` documents (early stopping)."""

    name = "chunk_classifier"

    def __init__(self, model: ChunkClassifier, x: torch.Tensor, m: torch.Tensor, y: torch.Tensor, train, dev):
        self.model, self.x, self.m, self.y = model, x, m, y  # x [N, C, D], m [N, C], y [N]
        self.train, self.dev = np.asarray(train), np.asarray(dev)

    @property
    def size(self) -> int:
        return len(self.train)

    def modules(self) -> dict[str, nn.Module]:
        return {"classifier": self.model}

    def identity(self) -> str:
        return content_key([self.name, self.model.kind], arrays=[self.train, self.dev, self.y.numpy()])

    def loss(self, rows: np.ndarray) -> torch.Tensor:
        docs = self.train[rows]
        return logit_loss(self.model(self.x[docs], self.m[docs]), self.y[docs])

    def evaluate(self) -> float:
        predicted = predict_chunks(self.model, self.x[self.dev], self.m[self.dev])
        return float((predicted == self.y[self.dev].numpy()).mean())


def train_chunk_classifier(
    kind: str,
    data: ChunkSequences,
    labels: np.ndarray,
    train: np.ndarray,
    dev: np.ndarray,
    *,
    config: TrainConfig = CHUNK_DEFAULTS,
) -> FittedChunkClassifier:
    """Fit on `train` rows through the training loop, keep the epoch with the best `dev` accuracy."""
    torch.manual_seed(config.seed)
    x = torch.from_numpy(data.vectors)
    m = torch.from_numpy(data.mask)
    y = torch.as_tensor(labels, dtype=torch.long)
    mean = x[train][m[train]].mean(dim=0)
    scale = x[train][m[train]].std(dim=0).clamp(min=1e-6)
    x = torch.where(m[..., None], (x - mean) / scale, torch.zeros_like(x))  # standardised chunks, padding stays 0
    model = ChunkClassifier(kind, x.shape[2], int(labels.max()) + 1)
    fine_tune(None, ChunkObjective(model, x, m, y, train, dev), None, config)
    return FittedChunkClassifier(model, mean, scale)


def predict_chunks(model: ChunkClassifier, x: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    model.eval()
    with torch.no_grad():
        return predict_classes(model(x, mask)).numpy()
