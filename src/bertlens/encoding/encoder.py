"""Encoder: texts -> LayerStates (all hidden states, masks, optional attentions) in one pass."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from inspect import signature

import numpy as np
import torch

from bertlens.encoding.batching import length_batches
from bertlens.encoding.cls_attention import ClsAttentionRecorder, attention_modules, cls_rows
from bertlens.encoding.device import batch_tokens, resolve_device
from bertlens.encoding.names import ATTENTION_MODES
from bertlens.encoding.precision import choose_precision
from bertlens.encoding.tokens import Tokenized, pad_ids, tokenize
from bertlens.errors import BertlensError, did_you_mean
from bertlens.models import ModelRef, default_max_length, load_encoder, load_tokenizer, model_family, resolve_model
from bertlens.progress import Progress, counting, silent


@dataclass(frozen=True)
class LayerStates:
    """One batch after a forward pass. Checked when built, so a missing piece fails here.

    hidden: [L+1, B, T, H] float32 (embedding output first)
    attention_mask / special_tokens_mask: [B, T] bool
    doc_index: [B] int64, the input row each batch row came from
    cls_attention: [L, B, T], the [CLS] query's attention averaged over heads (when asked)
    attentions: [L, B, heads, T, T] full attention maps (when asked; memory-heavy)
    """

    hidden: torch.Tensor
    attention_mask: torch.Tensor
    special_tokens_mask: torch.Tensor
    doc_index: torch.Tensor
    cls_attention: torch.Tensor | None = None
    attentions: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.hidden.dim() != 4:
            raise ValueError(f"hidden must be [L+1, B, T, H], got shape {tuple(self.hidden.shape)}")
        _, batch, length, _ = self.hidden.shape
        for name in ("attention_mask", "special_tokens_mask"):
            if tuple(getattr(self, name).shape) != (batch, length):
                raise ValueError(f"{name} must be [B, T] = {(batch, length)}, got {tuple(getattr(self, name).shape)}")
        if tuple(self.doc_index.shape) != (batch,):
            raise ValueError(f"doc_index must be [B] = ({batch},), got {tuple(self.doc_index.shape)}")
        if self.cls_attention is not None and tuple(self.cls_attention.shape[1:]) != (batch, length):
            raise ValueError(f"cls_attention must be [L, B, T], got {tuple(self.cls_attention.shape)}")

    @property
    def num_layers(self) -> int:
        return self.hidden.shape[0] - 1


class Encoder:
    """Owns a tokenizer and a model; turns texts into LayerStates, batch by batch.

    precision 'fp32' is exact; 'bf16' runs matrix products in bfloat16 under autocast; 'auto' picks bf16 only
    where the hardware has it (encoding/precision.py)
    (layer norms and softmax stay in float32), which is several times faster on CPUs with
    AVX512-BF16/AMX and keeps cosine >= 0.9999 to fp32 on the default model.
    """

    def __init__(
        self,
        model: str | ModelRef = "default",
        *,
        max_length: int | None = None,
        precision: str = "fp32",
        attentions: str = "none",
        max_batch: int = 128,
        max_tokens: int | None = None,
        device: str = "cpu",
        trust_remote_code: bool = False,
    ):
        if attentions not in ATTENTION_MODES:
            raise BertlensError(f"unknown attentions mode '{attentions}': {did_you_mean(attentions, ATTENTION_MODES)}")
        if precision not in ("fp32", "bf16", "auto"):
            raise BertlensError(f"unknown precision '{precision}': valid: fp32, bf16, auto")
        device = resolve_device(device)
        precision, self.precision_reason = choose_precision(precision, device=device)
        self.ref = model if isinstance(model, ModelRef) else resolve_model(model)
        self.tokenizer = load_tokenizer(self.ref, trust_remote_code)
        # SDPA where the family has it, bf16 included: on 256-token documents bf16 ran 1.53x faster with SDPA than
        # eager (38.0 against 24.8 docs/s, default model, AMD EPYC 2 cores), on 20-token sentences 5% slower (1,117
        # against 1,171 texts/s); one implementation per model, as threads share it (docs/results-log.md, issue #62).
        # Full attention maps need eager.
        self.model = load_encoder(self.ref, eager_attention=attentions == "all", trust_remote_code=trust_remote_code)
        self._recorder = None
        if attentions == "cls":
            modules = attention_modules(self.model)
            if modules is not None:
                self._recorder = ClsAttentionRecorder(modules)  # [CLS] rows from q/k hooks: SDPA stays on
            elif getattr(self.model.config, "_attn_implementation", None) != "eager":  # bf16, no SDPA: eager already
                self.model = load_encoder(self.ref, eager_attention=True, trust_remote_code=trust_remote_code)
        self.device = torch.device(device)
        self.model.to(self.device)
        if precision == "bf16":
            _linear_weights_in_bf16(self.model)
        self.precision = precision
        self.attentions = attentions
        self.max_batch = max_batch
        limit = default_max_length(self.ref, self.tokenizer)
        if max_length is not None and max_length > limit:
            raise BertlensError(
                f"max_length {max_length} exceeds the model's limit of {limit} tokens; use {limit} or less"
            )
        self.max_length = max_length or limit
        self.max_tokens = max_tokens or batch_tokens(device, self.model, self.max_length)  # padded tokens a batch
        family = model_family(self.ref)
        takes_types = (
            family.token_type_ids
            if family is not None
            else "token_type_ids" in signature(self.model.forward).parameters
        )
        # a tokenizer copied from BERT offers token types to a model that may not take them: the family decides
        self._uses_token_types = takes_types and "token_type_ids" in self.tokenizer.model_input_names
        self._pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0

    def for_thread(self) -> Encoder:
        """A copy another thread can encode with at the same time: it shares the weights (read-only under
        inference) and owns its tokenizer: a fast tokenizer shared by threads can fail with "Already borrowed" when
        one thread changes its truncation settings while another encodes (tokenizers #537, transformers #47085).
        The [CLS] attention hooks on the shared model keep what they capture per thread."""
        twin = copy.copy(self)
        twin.tokenizer = copy.deepcopy(self.tokenizer)
        return twin

    @property
    def num_layers(self) -> int:
        return self.ref.num_layers

    @property
    def hidden_size(self) -> int:
        return self.ref.hidden_size

    def tokenize(self, texts: Sequence[str], *, offsets: bool = False, word_starts: bool = False) -> Tokenized:
        """Tokenize with truncation at max_length and count how many texts were cut (see encoding/tokens.py)."""
        if offsets and not self.tokenizer.is_fast:
            raise BertlensError(
                f"model '{self.ref.name}' has no fast tokenizer, which word alignment needs (character offsets)"
            )
        return tokenize(self.tokenizer, texts, self.max_length, offsets=offsets, word_starts=word_starts)

    def pad(self, tokenized: Tokenized, rows: np.ndarray) -> dict[str, torch.Tensor]:
        """A padded batch of the given rows: input_ids, attention_mask, token_type_ids, special_tokens_mask [B, T]."""
        ids, attention = pad_ids([tokenized.input_ids[r] for r in rows], self._pad_id)  # [B, T] each
        special, _ = pad_ids([tokenized.special_tokens_mask[r] for r in rows], 0)  # [B, T]
        batch = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(attention)}
        if self._uses_token_types:
            batch["token_type_ids"] = torch.zeros_like(batch["input_ids"])
        batch["special_tokens_mask"] = torch.from_numpy(special.astype(bool))
        return batch

    def running(self):
        """Context for a run of many batches: under bf16, weights are cast once, not per batch.

        Code inside it runs under autocast too, so keep matrix products out of it or expect bf16.
        """
        if self.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def dropout_active(self, seed: int):
        """Inference with the model's dropout on (seeded): a stochastic view of each text, as SimCSE's positives
        (Gao et al. 2021). The model is back in eval mode afterwards."""
        state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        self.model.train()
        try:
            yield self
        finally:
            self.model.eval()
            torch.random.set_rng_state(state)

    def forward(
        self, tokenized: Tokenized, rows: np.ndarray, *, differentiable: bool = False, on_device: bool = False
    ) -> LayerStates:
        """Run one padded batch of the given rows through the model.

        differentiable: for training, in the model's current mode under the caller's autocast, with gradients
        (and without attention maps); otherwise inference, every layer as float32, moved to the CPU unless
        `on_device` (a caller that pools on the GPU and moves only the pooled rows: the feature bank, which on an
        H200 was bound by moving 13 layers of token states to the host and pooling them there).
        """
        batch = self.pad(tokenized, rows)
        special = batch.pop("special_tokens_mask")
        cuda = self.device.type == "cuda"  # pinned host memory, copies that overlap the previous batch's work
        inputs = {k: (v.pin_memory() if cuda else v).to(self.device, non_blocking=cuda) for k, v in batch.items()}
        if differentiable:
            out = self.model(**inputs, output_hidden_states=True)
            return LayerStates(
                hidden=torch.stack(out.hidden_states),  # [L+1, B, T, H]
                attention_mask=batch["attention_mask"].bool(),
                special_tokens_mask=special,
                doc_index=torch.as_tensor(rows),
            )
        maps_needed = self.attentions == "all" or (self.attentions == "cls" and self._recorder is None)
        with torch.inference_mode(), self.running():
            out = self.model(**inputs, output_hidden_states=True, output_attentions=maps_needed)
            cls_attention = self._recorder.weights(inputs["attention_mask"]) if self._recorder else None  # [L, B, T]
        host = (lambda t: t) if on_device else (lambda t: t.cpu())
        hidden = host(torch.stack(out.hidden_states).float())  # [L+1, B, T, H]
        attentions = None
        if maps_needed:
            cls_attention = host(cls_rows(out.attentions))  # [L, B, T]
            if self.attentions == "all":
                attentions = host(torch.stack(out.attentions).float())  # [L, B, heads, T, T]
        elif cls_attention is not None:
            cls_attention = host(cls_attention)
        return LayerStates(
            hidden=hidden,
            attention_mask=(inputs["attention_mask"] if on_device else batch["attention_mask"]).bool(),
            special_tokens_mask=special.to(hidden.device),
            doc_index=torch.from_numpy(np.asarray(rows, dtype=np.int64)),
            cls_attention=cls_attention,
            attentions=attentions,
        )

    def iter_states(self, tokenized: Tokenized, on_device: bool = False) -> Iterator[LayerStates]:
        """Length-bucketed batches; doc_index maps each row back to its input position."""
        for rows in length_batches(tokenized.lengths, self.max_batch, self.max_tokens):
            yield self.forward(tokenized, rows, on_device=on_device)

    def stream(
        self,
        tokenized: Tokenized,
        progress: Progress = silent,
        stage: str = "encoding",
        done: int = 0,
        total: int | None = None,
        on_device: bool = False,
    ) -> Iterator[LayerStates]:
        """The one encode loop: batches under `running()`, progress reported after each batch is consumed.

        `done`/`total` let a caller that streams several parts (groups of texts) report one count; `on_device`:
        the states stay on the model's device (see forward).
        Pooling inside the loop runs under autocast too, which is safe: poolers and mixers are
        element-wise or reductions (no matrix products).
        """
        total = len(tokenized.input_ids) if total is None else total
        with self.running():
            for states in self.iter_states(tokenized, on_device):
                yield states
                done += len(states.doc_index)
                progress(counting(stage, "texts"), done, total)


def _linear_weights_in_bf16(model: torch.nn.Module) -> None:
    """Store the linear layers' weights in bf16 once, for inference under bf16 autocast.

    Autocast casts every linear weight to bf16 again on each call (its cast cache holds only for tensors that
    need gradients, not under inference mode), which cost all-mpnet-base-v2 a sixth of its throughput on an
    Intel Xeon with AMX (387 -> 459 texts/s). Autocast would cast them to exactly these values, so the vectors
    are bit-identical; layer norms and embeddings stay float32, as autocast runs them. Encoders that train are
    built in fp32 and never reach here."""
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            module.to(torch.bfloat16)
