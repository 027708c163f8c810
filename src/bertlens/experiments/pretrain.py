"""`bertlens pretrain` as a library call: continued masked-LM pre-training (DAPT on a corpus, TAPT on a
task's own texts) in the one training loop, saved as a model directory every command accepts.

Gururangan et al. 2020 ("Don't Stop Pretraining"): continuing masked-LM training on in-domain
text (DAPT), or on the task's own unlabelled text (TAPT, far cheaper), helps a model whose
pre-training text was far from the task's. The corpus is tokenized once into a cached stream;
packed rows are read from it; a seeded slice of the rows is held out and never trained on,
and its masked-LM loss is measured before training (the base model) and after every epoch.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np

from bertlens.encoding.encoder import Encoder
from bertlens.encoding.token_stream import StreamRows, build_token_stream
from bertlens.errors import BertlensError
from bertlens.io.cache import default_cache_dir
from bertlens.io.run_context import RunContext
from bertlens.progress import DETAIL, Progress, silent
from bertlens.representation.recipe import Recipe
from bertlens.tasks.splits import hold_out_block
from bertlens.training import distributed
from bertlens.training.config import PRETRAIN_DEFAULTS, TrainConfig
from bertlens.training.loop import FineTuneResult, fine_tune
from bertlens.training.mlm_head import head_tensors, mlm_head
from bertlens.training.objectives import MaskedLM
from bertlens.training.saved_model import run_checkpoint, save_finetuned
from bertlens.training.strategies import parse_strategy

HEAD_FILE = "mlm_head.safetensors"  # the masked-LM head, saved beside the encoder (a second pretrain loads it)


@dataclass(frozen=True)
class PretrainOutcome:
    result: FineTuneResult
    tokens: int
    documents: int
    train_rows: int
    heldout_rows: int
    base_heldout: float  # held-out masked-LM loss of the model before training
    final_heldout: float
    head: str  # where the head came from
    recipe: Recipe


def _with_token_rate(progress: Progress, tokens_per_step: int) -> Progress:
    """Adds the training speed in word pieces per second (since this process started training) to the stage."""
    first: dict[str, float] = {}

    def update(stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        first.setdefault("step", done)
        first.setdefault("time", now)
        rate = (done - first["step"]) * tokens_per_step / (now - first["time"]) if now > first["time"] else 0.0
        separator = ", " if DETAIL in stage else DETAIL
        progress(f"{stage}{separator}{rate:,.0f} tokens/s" if rate else stage, done, total)

    return update


def _packed_rows(encoder, texts, source, source_key, cache, max_tokens, config, world, progress):
    """The corpus tokenized once (cached; under torchrun one process tokenizes, the others open its stream) and cut
    into packed rows of max_length; `max_tokens` keeps the first rows (equal budgets compare corpora fairly)."""
    tokenizer = encoder.tokenizer
    if world.writer:
        stream = build_token_stream(texts, tokenizer, encoder.ref.fingerprint, source_key, cache, progress)
    distributed.barrier(world)
    if not world.writer:
        stream = build_token_stream(texts, tokenizer, encoder.ref.fingerprint, source_key, cache, progress)
    if len(stream) == 0:
        raise BertlensError(f"{source}: the corpus has no text to train on")
    rows = StreamRows(
        stream, encoder.max_length, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id or 0
    )
    if max_tokens is not None:
        rows = rows.part(np.arange(min(len(rows), -(-max_tokens // rows.content))))
    if len(rows) < config.batch_size + 1:
        raise BertlensError(
            f"{source}: {len(stream)} tokens make {len(rows)} rows of {encoder.max_length}, fewer than one batch of "
            f"{config.batch_size} plus a held-out row; add text or lower --batch-size / --max-length"
        )
    return stream, rows


@dataclass(frozen=True)
class PretrainOptions:
    max_length: int = 128  # tokens per packed row
    mask_unit: str = "word"  # word (whole-word masking) or token
    heldout: float = 0.02  # share of the packed rows held out for the held-out loss
    max_tokens: int | None = None  # stop reading the corpus after this many tokens


def run_pretrain(
    model: str,
    texts: Iterable[str],
    source: str,
    source_key: str,
    run: RunContext,
    config: TrainConfig = PRETRAIN_DEFAULTS,
    options: PretrainOptions = PretrainOptions(),
) -> PretrainOutcome:
    """Continue masked-LM training of `model` on `texts` (`source` names them, `source_key` identifies them for the
    token cache); write run.out as a Hugging Face directory with the head kept."""
    out, cache_dir, restart, progress = run.out, run.cache_dir, run.restart, run.progress
    trust_remote_code = run.trust_remote_code
    max_length, mask_unit, heldout, max_tokens = (
        options.max_length,
        options.mask_unit,
        options.heldout,
        options.max_tokens,
    )
    start = time.perf_counter()
    world = distributed.setup()  # under torchrun: data-parallel, rank 0 writes; otherwise one process
    if not world.writer:
        progress = silent
    encoder = Encoder(model, max_length=max_length, trust_remote_code=trust_remote_code)
    tokenizer = encoder.tokenizer
    if tokenizer.mask_token_id is None or tokenizer.sep_token_id is None or tokenizer.cls_token_id is None:
        raise BertlensError(
            f"model '{model}': its tokenizer has no [MASK]/[CLS]/[SEP] tokens; masked-LM training needs them"
        )
    head, origin = mlm_head(encoder.model, encoder.ref.path, seed=config.seed, trust_remote_code=trust_remote_code)
    stream, rows = _packed_rows(
        encoder, texts, source, source_key, default_cache_dir(cache_dir), max_tokens, config, world, progress
    )
    kept, held_out = hold_out_block(len(rows), heldout, config.seed)
    train, held = rows.part(kept), rows.part(held_out)
    objective = MaskedLM(encoder, head, train, held, unit=mask_unit, seed=config.seed)
    base = objective.heldout_loss()
    checkpoint = run_checkpoint(out, restart)
    result = fine_tune(
        encoder,
        objective,
        parse_strategy("full", encoder.num_layers),
        config,
        checkpoint_dir=checkpoint,
        progress=_with_token_rate(progress, config.batch_size * world.size * rows.content),
    )
    final = objective.heldout_loss()
    if not world.writer:  # the replicas are identical: one process writes
        distributed.barrier(world)
        recipe = Recipe(model=str(out))
        return PretrainOutcome(
            result, len(stream), stream.documents, len(train), len(held), base, final, origin.note, recipe
        )
    recipe = save_finetuned(
        out,
        encoder,
        Recipe(max_length=encoder.max_length),
        None,
        {
            "objective": "masked_lm",
            "base_model": encoder.ref.name,
            "base_fingerprint": encoder.ref.fingerprint,
            "source": source,
            "tokens": len(stream),
            "tokens_trained_on": min(len(stream), len(train) * rows.content),
            "documents": stream.documents,
            "rows": len(rows),
            "train_rows": len(train),
            "heldout_rows": len(held),
            "max_length": encoder.max_length,
            "mask_unit": mask_unit,
            "head": origin.note,
            "config": asdict(config),
            "steps": result.steps,
            "first_loss": result.first_loss,
            "last_loss": result.last_loss,
            "heldout_loss_base": base,
            "heldout_loss_final": final,
            "heldout_loss_by_epoch": [-h for h in result.history],
            "loss_curve": [round(x, 5) for x in result.losses],
            "seconds": round(time.perf_counter() - start, 1),
        },
        tensors={HEAD_FILE: head_tensors(head, encoder.model)},  # the *ForMaskedLM names: a second pretrain loads it
    )
    shutil.rmtree(checkpoint, ignore_errors=True)
    distributed.barrier(world)
    return PretrainOutcome(
        result, len(stream), stream.documents, len(train), len(held), base, final, origin.note, recipe
    )
