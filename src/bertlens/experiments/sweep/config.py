"""What a sweep is asked to do, and the check that it can do it on a task's kind (the library's, not the CLI's)."""

from __future__ import annotations

from dataclasses import dataclass

from bertlens.errors import BertlensError, OptionError, did_you_mean, literal
from bertlens.io.run_context import check_seed
from bertlens.metrics.bootstrap import check_resamples
from bertlens.metrics.sequential import FIRST_STAGE, SETTLE_TOLERANCE
from bertlens.probing.candidates import PromptSet
from bertlens.probing.fold_ridge import ALPHA_GRID
from bertlens.probing.selection import C_GRID
from bertlens.representation.choices import DEFAULT_POOLERS, check_pooler
from bertlens.representation.postprocess import parse_steps
from bertlens.tasks.kinds import JUDGEMENTS, TaskKind
from bertlens.tasks.splits import DEV_FRACTION


@dataclass(frozen=True)
class SweepConfig:
    poolers: tuple[str, ...] = DEFAULT_POOLERS
    layers: tuple[int, ...] | None = None
    seed: int = 0
    strengths: tuple[float, ...] = C_GRID  # logistic C grid
    alphas: tuple[float, ...] = ALPHA_GRID  # ridge grid
    resamples: int = 1000
    dev_fraction: float = DEV_FRACTION
    bank_dtype: str = "float16"
    postprocess: str | None = None  # similarity tasks: also score every candidate with these steps (fitted on train);
    # retrieval: fitted on the corpus, 'whiten' unless given
    protocols: tuple[str, ...] | None = None  # None: every protocol the task supports (similarity: cosine, probe)
    prompt_sets: tuple[PromptSet, ...] = ()  # retrieval: also score every candidate with each prompt set
    long_documents: bool = False  # retrieval: also score ways of reading long documents (a pass per way of cutting)
    max_texts: int | None = None  # texts alone (run_texts_sweep): a seeded sample of this many (at least 8)
    rows: str = "all"  # all: score every row; auto: look at growing stages and stop when the choice is settled
    # (experiments/sweep/stages.py). Not the default: learning curves cross (docs/guide.md, "Large data")
    settle_tolerance: float = SETTLE_TOLERANCE  # auto: how far ahead of the pick a candidate may still be at the stop
    first_stage: int = FIRST_STAGE  # auto: rows at the first look (staged only when there are more than 2x as many)
    confidence: float = 0.95  # the intervals' level (a staged sweep sets it from its number of looks)


ROWS = ("auto", "all")


def check_config(config: SweepConfig, kind: TaskKind, task_name: str) -> None:
    """Refuse, in one line and before any work, what this sweep cannot apply to a task of this kind: a Python
    caller gets the same line as the CLI, never a setting silently ignored."""
    check_seed(config.seed)
    check_resamples(config.resamples)
    if config.rows not in ROWS:
        raise OptionError(f"{{rows}} is auto or all, not {literal(str(config.rows))}", "rows")
    if not 0 < config.settle_tolerance < 1:
        raise OptionError(
            f"{{settle_tolerance}} {config.settle_tolerance} is not between 0 and 1 (a difference in the task's "
            "metric, e.g. 0.005)",
            "settle_tolerance",
        )
    for name in config.poolers:
        check_pooler(name)
    if not config.poolers:
        raise OptionError("{poolers} names no pooler; give at least one of cls, mean, max, attention", "poolers")
    if config.postprocess:
        parse_steps(config.postprocess)
    for name, given in (("prompts", bool(config.prompt_sets)), ("long_documents", config.long_documents)):
        if given and kind.target != JUDGEMENTS:
            raise OptionError(
                f"{{{name}}} applies to retrieval tasks; {literal(task_name)} is a {kind.name} task", name
            )
    if config.prompt_sets and len({p.name for p in config.prompt_sets}) < len(config.prompt_sets):
        raise OptionError("{prompts}: give every prompt set its own NAME", "prompts")
    if config.protocols is not None:
        for name in config.protocols:
            if name not in kind.protocols:
                raise BertlensError(
                    f"protocol '{name}' does not apply to a {kind.name} task: {did_you_mean(name, kind.protocols)}"
                )
        if kind.main_protocol not in config.protocols:
            raise OptionError(
                f"a {kind.name} task is recommended by its '{kind.main_protocol}' protocol; include it in {{protocols}}",
                "protocols",
            )
