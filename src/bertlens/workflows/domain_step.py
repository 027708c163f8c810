"""Step 2 of `recommend`: domain fit (tokenizer fit, masked-LM surprise against UD EWT) -> `pretrain` or not,
by the thresholds `bertlens domain` uses."""

from __future__ import annotations

from pathlib import Path

from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.experiments.domain import FERTILITY_RATIO, GAP_NATS, UNK_RATE, default_reference, measure_domain
from bertlens.tasks.catalog import data_dir
from bertlens.tasks.loaders import TaskData
from bertlens.workflows.decision import Decision

RULE = (
    f"adapt when the loss gap is >= {GAP_NATS} nats (interval above 0), pieces per word >= {FERTILITY_RATIO}x, "
    f"or unknown >= {100 * UNK_RATE:g}%"
)


def step_domain(task: TaskData, encoder: Encoder, reference: tuple[list[str], str] | None, seed: int) -> Decision:
    if reference is None:
        return Decision(
            "domain",
            "not measured",
            "no reference corpus (UD EWT under $BERTLENS_DATA) was found",
            RULE,
            "rule of thumb: no reference to compare with; run `bertlens domain --texts ... --reference ...`",
        )
    result = measure_domain(encoder, task.all_texts(), reference[0], reference[1], samples=200, seed=seed)
    evidence = (
        f"word pieces per word {result.user.fertility:.2f} vs {result.ref.fertility:.2f} on the reference; unknown "
        f"{100 * result.user.unk_rate:.2f}%"
    )
    if result.gap is not None:
        evidence += f"; masked-LM loss gap {result.gap[0]:+.2f} nats [{result.gap[1]:+.2f}, {result.gap[2]:+.2f}]"
    confidence = "measured" if result.gap is not None else "measured (tokenizer only: " + "; ".join(result.notes) + ")"
    if result.adapt:
        return Decision(
            "domain",
            "continue pre-training on your texts (DAPT or TAPT)",
            evidence + "; " + "; ".join(result.reasons),
            RULE,
            confidence,
            (f"bertlens pretrain --from {result.model} --texts TEXTS --out OUT/dapt",),
        )
    return Decision("domain", "no adaptation needed", evidence, RULE, confidence)


def reference_corpus(data: Path | None) -> tuple[list[str], str] | None:
    """The default reference corpus (UD EWT training sentences) when the shared data has it, else None."""
    try:
        return default_reference(data or data_dir(None))
    except BertlensError:
        return None
