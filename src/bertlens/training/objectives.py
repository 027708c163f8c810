"""Training objectives as data: what a batch holds, the loss, and how the run is scored on dev.

The one training loop (loop.py) asks an objective four things and is otherwise the same for all:
  modules()         trainable modules besides the encoder (a head, the recipe's ScalarMix, a
                    projection...): trained at the head learning rate and checkpointed by name
  loss(rows)        the loss of the training examples `rows` (None: nothing to learn from them)
  evaluate()        a dev score where higher is better, or None (no early stopping)
  identity()        a content key of the data and settings (a checkpoint of another run is refused)
Objectives here: `Supervised` (classification, pair classification, cosine-similarity regression,
through a Head), `Contrastive` (InfoNCE: unsupervised SimCSE or (anchor, positive) pairs),
`MaskedLM` (continued pre-training) and `Distillation` (regress a teacher recipe's vectors).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from bertlens.encoding.encoder import Encoder, Tokenized
from bertlens.encoding.token_stream import StreamRows
from bertlens.encoding.tokens import map_batches
from bertlens.errors import BertlensError
from bertlens.io.cache import content_key
from bertlens.metrics.bootstrap import micro_f1, spearman
from bertlens.representation.apply import Representation
from bertlens.representation.logits import label_thresholds
from bertlens.tasks.kinds import TaskKind, task_kind
from bertlens.tasks.loaders import Split
from bertlens.training.heads import Head
from bertlens.training.masking import IGNORE, mask_tokens, replacement_ids


@dataclass(frozen=True)
class Encoded:
    """Tokenized texts of one split (one or two sides) and its targets."""

    a: Tokenized
    b: Tokenized | None
    targets: np.ndarray

    @classmethod
    def of(cls, encoder: Encoder, split: Split) -> Encoded:
        b = encoder.tokenize(split.texts_b) if split.texts_b is not None else None
        return cls(encoder.tokenize(split.texts_a), b, split.targets)

    def __len__(self) -> int:
        return len(self.targets)


def sentence_vectors(
    encoder: Encoder, representation: Representation, tokenized: Tokenized, rows: np.ndarray
) -> torch.Tensor:
    """Differentiable recipe vectors [B, D] for the given rows (the model's current mode applies)."""
    return representation(encoder.forward(tokenized, rows, differentiable=True))


def score(predictions: np.ndarray, targets: np.ndarray, kind: TaskKind) -> float:
    """Accuracy for class labels, Spearman for scores, micro-F1 for label sets (the kind's metric)."""
    if kind.classes:
        return float((predictions == targets).mean())
    if kind.label_sets:
        return float(micro_f1(np.asarray(predictions, dtype=bool)[None], targets)[0])
    return float(spearman(predictions, targets))


def info_nce(u: torch.Tensor, v: torch.Tensor, temperature: float) -> torch.Tensor:
    """u, v [B, D]: cross-entropy of each u_i picking v_i among all v_j by cosine / temperature (van den Oord et al. 2018)."""
    similarity = torch.nn.functional.cosine_similarity(u[:, None], v[None], dim=-1) / temperature  # [B, B]
    return torch.nn.functional.cross_entropy(similarity, torch.arange(len(u)))


class Supervised:
    """A head on the recipe's vectors: classification, pair classification (u, v, |u-v|, u*v) or cosine regression."""

    def __init__(
        self,
        encoder: Encoder,
        representation: Representation,
        head: Head,
        train: Encoded,
        dev: Encoded,
        kind: TaskKind | str,
    ):
        if representation.recipe.pooler == "attention":
            raise BertlensError("fine-tuning with the 'attention' pooler is not supported; use cls, mean or max")
        self.encoder, self.representation, self.head = encoder, representation, head
        self.train, self.dev, self.kind = train, dev, task_kind(kind)
        self.name = head.spec.kind

    @property
    def size(self) -> int:
        return len(self.train)

    def modules(self) -> dict[str, nn.Module]:
        return {"head": self.head, "representation": self.representation}

    def identity(self) -> str:
        return content_key(
            ["supervised", self.representation.recipe.to_dict(), self.kind.name],
            arrays=[
                *(np.asarray(ids, dtype=np.int64) for ids in self.train.a.input_ids),
                np.asarray(self.train.targets),
            ],
        )

    def _outputs(self, data: Encoded, rows: np.ndarray) -> torch.Tensor:
        u = sentence_vectors(self.encoder, self.representation, data.a, rows)
        v = sentence_vectors(self.encoder, self.representation, data.b, rows) if data.b is not None else None
        return self.head(u, v)

    def loss(self, rows: np.ndarray) -> torch.Tensor:
        return self.head.loss(self._outputs(self.train, rows), torch.as_tensor(self.train.targets[rows]))

    def predict(self, data: Encoded, batch_size: int = 64) -> np.ndarray:
        """Class ids or similarity scores [n] in input order (eval mode, no gradients); label sets [n, L] cut at each
        label's threshold chosen on dev (the probe's rule: representation/logits.label_thresholds)."""
        outputs = self._head_outputs(data, batch_size)
        if not self.kind.label_sets:
            return outputs
        dev = outputs if data is self.dev else self._head_outputs(self.dev, batch_size)  # [n_dev, L] probabilities
        return outputs >= label_thresholds(dev, self.dev.targets)[None]

    def _head_outputs(self, data: Encoded, batch_size: int) -> np.ndarray:
        self.encoder.model.eval()
        self.head.eval()
        self.representation.eval()
        lengths = data.a.lengths if data.b is None else np.maximum(data.a.lengths, data.b.lengths)
        with torch.no_grad():
            return map_batches(
                lengths,
                lambda rows: self.head.predict(self._outputs(data, rows)).double().numpy(),
                batch_size,
                batch_size * 128,
            )

    def evaluate(self) -> float:
        return score(self.predict(self.dev), self.dev.targets, self.kind)


class Contrastive:
    """InfoNCE with in-batch negatives over the recipe's vectors u, v [B, D]:  loss = CE(cos(u_i, v_j) / tau, j = i).

    - positives=None: unsupervised SimCSE (Gao et al. 2021): v is the same sentence encoded again;
      the only noise is dropout, which makes the two passes differ (tau = 0.05).
    - positives given: multiple-negatives ranking (Henderson et al. 2017) on (anchor, positive)
      pairs; the other positives in the batch are the negatives.
    """

    def __init__(
        self,
        encoder: Encoder,
        representation: Representation,
        anchors: Tokenized,
        positives: Tokenized | None,
        temperature: float = 0.05,
    ):
        if representation.recipe.pooler == "attention":
            raise BertlensError(
                "contrastive training with the 'attention' pooler is not supported; use cls, mean or max"
            )
        if positives is not None and len(positives.input_ids) != len(anchors.input_ids):
            raise ValueError("anchors and positives must pair up")
        if len(anchors.input_ids) < 2:
            raise BertlensError(f"contrastive training needs at least 2 examples, got {len(anchors.input_ids)}")
        self.encoder, self.representation = encoder, representation
        self.anchors, self.positives, self.temperature = anchors, positives, temperature
        self.name = "simcse" if positives is None else "multiple_negatives_ranking"

    @property
    def size(self) -> int:
        return len(self.anchors.input_ids)

    def modules(self) -> dict[str, nn.Module]:
        return {"representation": self.representation}

    def identity(self) -> str:
        sides = [self.anchors] + ([self.positives] if self.positives is not None else [])
        return content_key(
            [self.name, self.representation.recipe.to_dict(), self.temperature],
            arrays=[np.asarray(ids, dtype=np.int64) for side in sides for ids in side.input_ids],
        )

    def loss(self, rows: np.ndarray) -> torch.Tensor | None:
        rows = np.sort(rows)
        if len(rows) < 2:
            return None  # a single example has no in-batch negative
        u = sentence_vectors(self.encoder, self.representation, self.anchors, rows)  # [B, D], dropout on
        v = sentence_vectors(
            self.encoder, self.representation, self.positives if self.positives is not None else self.anchors, rows
        )  # [B, D]
        return info_nce(u, v, self.temperature)

    def evaluate(self) -> None:
        return None  # trained for a fixed number of steps


@dataclass(frozen=True)
class TokenBatch:
    """A padded batch as masked-LM scoring reads it, each [B, T]: ids; maskable (False at special and padding
    positions); word_start (True at a word's first piece); real (True where not padding)."""

    ids: torch.Tensor
    maskable: torch.Tensor
    word_start: torch.Tensor
    real: torch.Tensor


def masked_token_losses(
    encoder: Encoder,
    head: nn.Module,
    batch: TokenBatch,
    *,
    random_ids: torch.Tensor,
    generator: torch.Generator | None = None,
    rate: float = 0.15,
    unit: str = "word",
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Mask the batch's inputs, run the encoder, score the head at masked positions only.

    Returns (cross-entropy per masked position [M], the row of each [M]), or None when nothing was
    drawn. The one masked-LM computation: training (MaskedLM) and measuring (`bertlens domain`) share it.
    """
    masked = mask_tokens(
        batch.ids,
        batch.maskable,
        batch.word_start,
        mask_id=encoder.tokenizer.mask_token_id,
        random_ids=random_ids,
        generator=generator,
        rate=rate,
        unit=unit,
    )
    chosen = masked.labels != IGNORE  # [B, T]
    if not chosen.any():
        return None
    hidden = encoder.model(input_ids=masked.inputs, attention_mask=batch.real.long()).last_hidden_state  # [B, T, H]
    losses = torch.nn.functional.cross_entropy(head(hidden[chosen]), masked.labels[chosen], reduction="none")  # [M]
    return losses, chosen.nonzero()[:, 0]


class MaskedLM:
    """Masked-language modelling (continued pre-training): dynamic masks, logits at masked positions only.

    Rows come from a token stream (encoding/token_stream.StreamRows). The head (training/mlm_head.py)
    is the model's own or a new one tied to its input embeddings. Masks of training batches come from
    torch's global generator (saved in checkpoints); the held-out slice uses fixed, seeded masks, so its
    loss is comparable from one evaluation to the next. `evaluate` returns minus the held-out loss
    (higher is better, as the loop expects).
    """

    def __init__(
        self,
        encoder: Encoder,
        head: nn.Module,
        rows: StreamRows,
        heldout: StreamRows | None,
        *,
        unit: str = "word",
        rate: float = 0.15,
        seed: int = 0,
    ):
        if encoder.tokenizer.mask_token_id is None:
            raise BertlensError(f"model '{encoder.ref.name}' has no [MASK] token; masked-LM training needs one")
        self.encoder, self.head, self.rows, self.heldout = encoder, head, rows, heldout
        self.unit, self.rate, self.seed = unit, rate, seed
        self.random_ids = replacement_ids(encoder.tokenizer)
        self.name = "masked_lm"

    @property
    def size(self) -> int:
        return len(self.rows)

    def modules(self) -> dict[str, nn.Module]:
        return {"mlm_head": self.head}

    def identity(self) -> str:
        return content_key(["masked_lm", self.unit, self.rate, self.rows.key()])

    def batch_loss(
        self, data: StreamRows, rows: np.ndarray, generator: torch.Generator | None = None
    ) -> torch.Tensor | None:
        """Mean cross-entropy at the masked positions of `rows` of `data` (None: nothing was drawn)."""
        ids, word_start, special, real = (torch.from_numpy(a) for a in data.take(rows))  # [B, T] each
        scored = masked_token_losses(
            self.encoder,
            self.head,
            TokenBatch(ids, real & ~special, word_start, real),
            random_ids=self.random_ids,
            generator=generator,
            rate=self.rate,
            unit=self.unit,
        )
        return None if scored is None else scored[0].mean()

    def loss(self, rows: np.ndarray) -> torch.Tensor | None:
        return self.batch_loss(self.rows, rows)

    def heldout_loss(self, batch_size: int = 32) -> float:
        """Mean masked-LM loss on the held-out rows, with masks fixed by the seed."""
        self.encoder.model.eval()
        self.head.eval()
        generator = torch.Generator().manual_seed(self.seed + 7919)
        total, count = 0.0, 0
        with torch.no_grad():
            for start in range(0, len(self.heldout), batch_size):
                rows = np.arange(start, min(start + batch_size, len(self.heldout)))
                loss = self.batch_loss(self.heldout, rows, generator)
                if loss is not None:
                    total += float(loss) * len(rows)
                    count += len(rows)
        return total / count if count else float("nan")

    def evaluate(self) -> float | None:
        return None if self.heldout is None else -self.heldout_loss()


class Distillation:
    """Feature distillation (Hinton et al. 2015; Reimers & Gurevych 2020, "Making monolingual sentence
    embeddings multilingual"): the student's vectors s = P(pool(student)) regress the teacher's t:

        loss = mean over the batch and dimensions of (s - t)^2  +  cosine_weight * mean(1 - cos(s, t))

    P is an optional learned linear projection (when the widths differ or the teacher's space was
    post-processed). The dev score is the mean cosine to the teacher on held-out texts.
    """

    def __init__(
        self,
        encoder: Encoder,
        representation: Representation,
        texts: Tokenized,
        targets: np.ndarray,
        heldout: Tokenized,
        heldout_targets: np.ndarray,
        projection: nn.Linear | None = None,
        cosine_weight: float = 0.0,
    ):
        if len(texts.input_ids) != len(targets) or len(heldout.input_ids) != len(heldout_targets):
            raise ValueError("every text needs its teacher vector")
        if len(targets) < 2 or len(heldout_targets) < 1:
            raise BertlensError("distillation needs at least 2 training texts and 1 held-out text")
        self.encoder, self.representation, self.projection = encoder, representation, projection
        self.texts, self.heldout, self.cosine_weight = texts, heldout, cosine_weight
        self.targets = torch.as_tensor(targets, dtype=torch.float32)  # [N, D]
        self.heldout_targets = torch.as_tensor(heldout_targets, dtype=torch.float32)  # [M, D]
        self.name = "distillation"

    @property
    def size(self) -> int:
        return len(self.targets)

    def modules(self) -> dict[str, nn.Module]:
        return {"representation": self.representation} | (
            {"projection": self.projection} if self.projection is not None else {}
        )

    def identity(self) -> str:
        return content_key(
            ["distillation", self.representation.recipe.to_dict(), self.cosine_weight, self.projection is not None],
            arrays=[self.targets.numpy(), *(np.asarray(ids, dtype=np.int64) for ids in self.texts.input_ids)],
        )

    def student_vectors(self, tokenized: Tokenized, rows: np.ndarray) -> torch.Tensor:
        vectors = sentence_vectors(self.encoder, self.representation, tokenized, rows)  # [B, H]
        return self.projection(vectors) if self.projection is not None else vectors  # [B, D]

    def loss(self, rows: np.ndarray) -> torch.Tensor:
        student = self.student_vectors(self.texts, rows).float()  # [B, D]
        teacher = self.targets[rows]  # [B, D]
        loss = torch.nn.functional.mse_loss(student, teacher)
        if self.cosine_weight:
            loss = loss + self.cosine_weight * (1 - torch.nn.functional.cosine_similarity(student, teacher)).mean()
        return loss

    def predict(self, tokenized: Tokenized, batch_size: int = 64) -> np.ndarray:
        """The student's vectors [n, D] in input order (eval mode, no gradients)."""
        for module in (self.encoder.model, *self.modules().values()):
            module.eval()
        with torch.no_grad():
            return map_batches(
                tokenized.lengths,
                lambda rows: self.student_vectors(tokenized, rows).float().numpy(),  # [B, D]
                batch_size,
                batch_size * 128,
            )

    def heldout_cosines(self) -> np.ndarray:
        """Cosine of the student's vector to the teacher's, per held-out text [M]."""
        student = torch.from_numpy(self.predict(self.heldout))
        return torch.nn.functional.cosine_similarity(student, self.heldout_targets).numpy()

    def evaluate(self) -> float:
        return float(self.heldout_cosines().mean())
