"""`pretrain` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    adapted = bertlens.pretrain(model="default", texts=["clinical_notes.txt"], out="models/dapt")   # DAPT
    adapted = bertlens.pretrain(model="default", task="sst2", out="models/tapt")                   # TAPT
    raw = bertlens.pretrain(scratch="tiny", tokenizer="models/base", texts=[...], out="models/raw") # from scratch

`bertlens pretrain --from default --texts notes.txt --out DIR` parses its flags into the same `PretrainOptions` and
calls the same `run_pretrain_command` (under torchrun, one process per rank: rank 0 writes and prints).
"""

from __future__ import annotations

import html
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from cyclopts import Parameter

from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.results import RowsResult, save_options
from bertlens.api.training_options import PretrainTraining, training_config
from bertlens.errors import OptionError
from bertlens.io.run_context import check_seed
from bertlens.progress import Progress, silent


@dataclass(frozen=True, kw_only=True)
class PretrainOptions(PretrainTraining):
    """Every option of `bertlens pretrain`, by the name of its long flag (`--from` is `model`); the schedule
    (RoBERTa's by default): `PretrainTraining`."""

    model: Annotated[str | None, Parameter(name=["--from", "--model"])] = None
    """the model to continue: 'default', a directory, a hub id (or --scratch)"""
    scratch: str | None = None
    """train from scratch instead: a size (tiny, mini, small, medium) or a BertConfig JSON file (with --tokenizer)"""
    tokenizer: Path | None = None
    """with --scratch: a directory holding the tokenizer to use"""
    texts: Sequence[Path] | None = None
    """corpus files (a .txt file holds a document a line; .csv/.tsv/.parquet or .jsonl with --column); several may be
    given. From Python also a list of strings (the documents themselves)"""
    column: str | None = None
    """for --texts CSV/TSV/Parquet/JSONL: the text column (header name or 0-based index) or field"""
    task: str | None = None
    """a catalog task's training texts (TAPT): sst2, mr, subj, trec, stsb, movie_reviews, cranfield, cisi, npl"""
    data_dir: str | None = None
    """where the shared data lives: catalog tasks, UD EWT (default $BERTLENS_DATA or ../shared/data)"""
    max_length: int = 128
    """tokens per packed row"""
    mask_unit: Literal["word", "token"] = "word"
    """whole-word masking (word) or single word pieces (token)"""
    heldout: float = 0.02
    """share of rows held out for the held-out loss"""
    max_tokens: int | None = None
    """use only the first N tokens of the corpus (a token budget)"""
    cache_dir: Path | None = None
    """token-stream cache (default $BERTLENS_CACHE or ~/.cache/bertlens)"""
    trust_remote_code: bool = False
    """allow model code from the hub (off by default)"""
    seed: int = 0
    """seed for sampling, splits, initialisation and data order"""
    out: Path | None = None
    """model directory to write (an interrupted run resumes here)"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> PretrainOptions:
        """Every check that needs no data and no model, in the options' own names."""
        finite(self)
        one_of(self)
        if self.out is None:
            raise OptionError("{out} is required: the model directory to write", "out")
        if (self.model is None) == (self.scratch is None):
            raise OptionError("give exactly one of {model} (continue a model) or {scratch} (train from scratch)",
                              "model", "scratch")  # fmt: skip
        if self.scratch is not None and self.tokenizer is None:
            raise OptionError("{scratch} trains from scratch and needs {tokenizer} (e.g. a model directory)",
                              "scratch", "tokenizer")  # fmt: skip
        if self.scratch is not None:
            from bertlens.training.students import scratch_config

            scratch_config(self.scratch)  # a size or a readable BertConfig JSON, before any work
        if (self.texts is None) == (self.task is None):
            raise OptionError("give exactly one of {texts} or {task}", "texts", "task")
        if not 0 < self.heldout < 0.5:
            raise OptionError(f"{{heldout}} must be a share between 0 and 0.5, e.g. 0.02; got {self.heldout}",
                              "heldout")  # fmt: skip
        at_least(self, "max_tokens", 1, "leave it out for the whole corpus")
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        check_seed(self.seed)
        training_config(self, self.seed)  # the schedule's own checks, before any model loads
        texts = (Path(self.texts),) if isinstance(self.texts, str | Path) else self.texts
        return replace(self, texts=texts, out=Path(self.out))

    def in_memory(self) -> bool:
        """Documents given as a list of strings (files are Paths: the command line's, or one path as a string)."""
        return self.texts is not None and all(isinstance(t, str) for t in self.texts)


@dataclass(frozen=True)
class PretrainRun(RowsResult):
    """A model directory in `out` (the masked-LM head kept): how many tokens and steps, and the held-out masked-LM
    loss before and after."""

    outcome: Any  # experiments/pretrain.py:PretrainOutcome
    source: str
    options: PretrainOptions

    def rows(self) -> list[dict]:
        o = self.outcome
        return [{"source": self.source, "tokens": o.tokens, "documents": o.documents, "steps": o.result.steps,
                 "heldout_loss_base": o.base_heldout, "heldout_loss_final": o.final_heldout, "head": o.head,
                 "seconds": o.result.seconds}]  # fmt: skip

    def __repr__(self) -> str:
        o = self.outcome
        return (f"PretrainRun({o.tokens:,} tokens, {o.result.steps} steps; held-out loss {o.base_heldout:.3f} -> "
                f"{o.final_heldout:.3f}; model in {self.options.out})")  # fmt: skip

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(repr(self))}</p>"


def _corpus(options: PretrainOptions):
    """(texts, a description of the source, the content key the token cache is keyed by)."""
    from bertlens.api.sources import training_texts
    from bertlens.io.cache import content_key, file_sha256
    from bertlens.io.tables import check_file, is_blank, iter_texts, parse_column
    from bertlens.tasks.catalog_fetch import load_catalog

    if options.task is not None:
        texts = training_texts(load_catalog(options.task, options.data_dir))
        return texts, f"task {options.task} (training texts)", content_key(["task", options.task], texts)
    if options.in_memory():
        texts = [t for t in options.texts if not is_blank(t)]
        return texts, f"{len(options.texts)} documents in memory", content_key(["memory"], texts)
    for path in options.texts:
        check_file(Path(path))
    column = parse_column(options.column) if options.column else None
    texts = (t for path in options.texts for t in iter_texts(path, column) if not is_blank(t))  # streamed
    key = content_key([options.column, [file_sha256(Path(p)) for p in options.texts]])
    return texts, ", ".join(str(p) for p in options.texts), key


def run_pretrain_command(options: PretrainOptions, *, progress: Progress = silent) -> PretrainRun | None:
    """Check the options (before any model loads), read the corpus, and continue masked-LM training into `out`.
    Under torchrun every rank trains; rank 0 writes and returns the result (the others return None)."""
    from bertlens.experiments.pretrain import PretrainOptions as Settings
    from bertlens.experiments.pretrain import run_pretrain
    from bertlens.io.run_context import RunContext
    from bertlens.training import distributed
    from bertlens.training.students import initialise_from_scratch

    checked = options.check()
    config = training_config(checked, checked.seed)
    texts, source, key = _corpus(checked)
    world = distributed.setup()  # under torchrun: one process per rank, rank 0 writes and prints
    model = checked.model
    if checked.scratch is not None:
        if world.writer:
            initialise_from_scratch(checked.scratch, checked.tokenizer, checked.out / ".init", checked.seed,
                                    checked.max_length)  # fmt: skip
        distributed.barrier(world)
        model = str(checked.out / ".init")
    run = RunContext(checked.out, checked.cache_dir, config.seed, progress if world.writer else silent,
                     restart=checked.restart, trust_remote_code=checked.trust_remote_code)  # fmt: skip
    settings = Settings(checked.max_length, checked.mask_unit, checked.heldout, checked.max_tokens)
    outcome = run_pretrain(model, texts, source, key, run, config, settings)
    if not world.writer:
        return None
    if checked.scratch is not None:
        shutil.rmtree(checked.out / ".init", ignore_errors=True)  # the random starting point, no longer needed
    save_options(checked.out, checked)
    return PretrainRun(outcome, source, checked)


def pretrain(**options: Any) -> PretrainRun | None:
    """Continue masked-LM training of a model on your documents (DAPT), a task's texts (TAPT), or train one from
    scratch: the keywords are `bertlens pretrain`'s long flags (`--from` is `model`; see `PretrainOptions`)."""
    return python_call(PretrainOptions, run_pretrain_command, options)
