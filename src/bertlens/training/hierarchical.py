"""Classifiers over a document's sequence of chunk vectors, trained on frozen chunk embeddings.

attention: learned attention over chunks (a_i = softmax_i(w . tanh(W c_i)); doc = sum a_i c_i),
           then a linear layer (the additive attention of Yang et al. 2016, "Hierarchical
           attention networks for document classification")
gru:       a bidirectional GRU over the chunks in order; the mean of its states feeds a
           linear layer (a small hierarchical model in the spirit of Pappagari et al. 2019,
           "Hierarchical transformers for long document classification")
Trained with Adam on padded batches, early stopping on a dev split, seeded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

HIERARCHICAL = ("attention", "gru")


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
        self.out = nn.Linear(width, classes)

    def forward(self, chunks: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """chunks [B, C, D], mask [B, C] bool -> logits [B, K]."""
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


def train_chunk_classifier(
    kind: str,
    data: ChunkSequences,
    labels: np.ndarray,
    train: np.ndarray,
    dev: np.ndarray,
    *,
    epochs: int = 40,
    batch_size: int = 32,
    lr: float = 1e-3,
    patience: int = 5,
    seed: int = 0,
) -> FittedChunkClassifier:
    """Fit on `train` rows, keep the epoch with the best `dev` accuracy."""
    torch.manual_seed(seed)
    x = torch.from_numpy(data.vectors)
    m = torch.from_numpy(data.mask)
    y = torch.as_tensor(labels, dtype=torch.long)
    mean = x[train][m[train]].mean(dim=0)
    scale = x[train][m[train]].std(dim=0).clamp(min=1e-6)
    x = torch.where(m[..., None], (x - mean) / scale, torch.zeros_like(x))  # standardised chunks, padding stays 0
    model = ChunkClassifier(kind, x.shape[2], int(labels.max()) + 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-4)
    generator = torch.Generator().manual_seed(seed)
    best, best_state, bad = -1.0, None, 0
    for _ in range(epochs):
        model.train()
        order = train[torch.randperm(len(train), generator=generator).numpy()]
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            loss = nn.functional.cross_entropy(model(x[rows], m[rows]), y[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        accuracy = float((predict_chunks(model, x[dev], m[dev]) == y[dev].numpy()).mean())
        if accuracy > best:
            best, bad = accuracy, 0
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        else:
            bad += 1
            if bad >= patience:
                break
    model.load_state_dict(best_state)
    model.eval()
    return FittedChunkClassifier(model, mean, scale)


def predict_chunks(model: ChunkClassifier, x: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    model.eval()
    with torch.no_grad():
        return model(x, mask).argmax(dim=1).numpy()
