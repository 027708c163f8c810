"""`probe` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    suite = bertlens.probe(max_sentences=500, tasks="upos,sentence_length")   # the linguistic suite, default model
    suite.to_pandas(), suite.plot(), suite.save("out/probe")

`bertlens probe --suite linguistic ...` parses its flags into the same `ProbeOptions` and calls the same
`run_probe_command`: which layers hold syntax (UD token tasks, each with its control task) and which hold sentence
properties.
"""

from __future__ import annotations

import dataclasses
import html
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.recipe_options import EncoderOptions
from bertlens.api.results import RowsResult, save_options
from bertlens.errors import OptionError
from bertlens.io.run_context import check_seed
from bertlens.progress import Progress, silent
from bertlens.tasks.probing_names import ALL_TASKS

if TYPE_CHECKING:
    from bertlens.experiments.linguistic import SuiteResult


@dataclass(frozen=True, kw_only=True)
class ProbeOptions(EncoderOptions):
    """Every option of `bertlens probe`, by the name of its long flag; the model: `EncoderOptions`."""

    model: str = "default"
    """'default' (all-MiniLM-L6-v2), a local model directory or a hub id"""
    suite: Literal["linguistic"] = "linguistic"
    """which probing suite to run (one so far)"""
    treebank: Path | None = None
    """directory with train/dev/test .conllu files (default: ud-ewt under --data-dir / $BERTLENS_DATA)"""
    data_dir: str | None = None
    """where the shared data lives: catalog tasks, UD EWT (default $BERTLENS_DATA or ../shared/data)"""
    tasks: str | Sequence[str] = ",".join(ALL_TASKS)
    """comma list (default all): upos, xpos, deprel, sentence_length, word_content, tree_depth, top_dependents, tense,
    subject_number, object_number, bigram_shift, coordination_inversion; from Python also a list"""
    subword: Literal["first", "last", "mean"] = "mean"
    """word vector from its subword tokens"""
    pooler: str = "mean"
    """sentence vector pooler for sentence tasks"""
    max_sentences: int | None = None
    """use the first N sentences of each split (quick runs)"""
    max_train_words: int | None = None
    """a seeded sample of N training words for token tasks"""
    resamples: int = 1000
    """bootstrap resamples"""
    cache_dir: Path | None = None
    """feature-bank cache (default $BERTLENS_CACHE or ~/.cache/bertlens)"""
    seed: int = 0
    """seed for sampling, splits, initialisation and data order"""
    out: Path | None = None
    """output directory (the command line's default: out/probe; from Python, None writes nothing until save())"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> ProbeOptions:
        """Every check that needs no data and no model, in the options' own names; the options, normalised."""
        from bertlens.experiments.linguistic import check_tasks
        from bertlens.metrics.bootstrap import MIN_RESAMPLES
        from bertlens.representation.choices import check_pooler

        finite(self)
        one_of(self)
        at_least(self, "max_sentences", 1, "leave it out for every sentence")
        at_least(self, "max_train_words", 1, "leave it out for every training word")
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        at_least(self, "resamples", MIN_RESAMPLES, "a 95% interval's tails need draws of their own")
        check_seed(self.seed)
        items = self.tasks.split(",") if isinstance(self.tasks, str) else list(self.tasks)
        tasks = check_tasks(tuple(t.strip() for t in items if str(t).strip()))
        if not tasks:
            raise OptionError("{tasks} is empty; name at least one task", "tasks")
        paths = {n: Path(getattr(self, n)) for n in ("treebank", "cache_dir", "out") if getattr(self, n) is not None}
        return dataclasses.replace(self, tasks=tasks, pooler=check_pooler(self.pooler), **paths)


@dataclass(frozen=True)
class ProbeRun(RowsResult):
    """A finished suite: per task the accuracy of layer 0, of the best layer (chosen on dev) with its interval, of
    the ScalarMix, the mix's centre of gravity and the selectivity over the control task; the plots; `save(dir)`
    writing what `bertlens probe` writes."""

    result: SuiteResult
    options: ProbeOptions

    def rows(self) -> list[dict]:
        from bertlens.reports.linguistic import summary_row

        return [summary_row(outcome) for outcome in self.result.outcomes.values()]

    def plot(self):
        """The layer x task heatmap of test accuracy, as a matplotlib Figure."""
        from bertlens.reports.linguistic import heatmap_figure

        return heatmap_figure(self.result)

    def save(self, out: str | Path) -> dict[str, Path]:
        """results.json, heatmap.png, curves.png, report.md and options.json under `out`."""
        from bertlens.reports.linguistic import write_outputs

        out = Path(out)
        return {**write_outputs(self.result, out), "options": save_options(out, self.options)}

    def __repr__(self) -> str:
        return (
            f"ProbeRun({self.result.model!r}: {len(self.result.outcomes)} tasks over {self.result.num_layers} layers)"
        )

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("task", "layer 0", "best layer", "best [95% CI]", "ScalarMix"))
        body = "".join(
            f"<tr><td>{html.escape(r['task'])}</td><td>{100 * r['layer0']:.1f}</td><td>{r['best_layer']}</td>"
            f"<td>{100 * r['best']:.1f} [{100 * r['best_low']:.1f}, {100 * r['best_high']:.1f}]</td>"
            f"<td>{100 * r['mix']:.1f}</td></tr>"
            for r in self.rows()
        )
        return (
            f"<div><p>linguistic probes of <b>{html.escape(self.result.model)}</b> (test accuracy %, best layer "
            f"chosen on dev)</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        )


def run_probe_command(options: ProbeOptions, *, progress: Progress = silent) -> ProbeRun:
    """Check the options (before any model loads), read the treebank, probe every layer, and save when `out` is
    given (the probing datasets and per-task checkpoints go there too, so a rerun resumes)."""
    from bertlens.encoding.encoder import Encoder
    from bertlens.experiments.linguistic import SuiteConfig, run_linguistic_suite
    from bertlens.io.cache import default_cache_dir
    from bertlens.tasks.catalog import data_dir
    from bertlens.tasks.conllu import load_treebank

    checked = options.check()
    splits = load_treebank(checked.treebank or data_dir(checked.data_dir) / "ud-ewt", checked.max_sentences)
    encoder = Encoder(
        checked.model,
        max_length=checked.max_length,
        precision=checked.precision or "fp32",
        attentions="cls" if checked.pooler == "attention" else "none",
        trust_remote_code=checked.trust_remote_code,
        device=checked.device,
    )
    config = SuiteConfig(
        tasks=checked.tasks,
        subword=checked.subword,
        sentence_pooler=checked.pooler,
        seed=checked.seed,
        resamples=checked.resamples,
        max_train_words=checked.max_train_words,
    )
    with tempfile.TemporaryDirectory(prefix="bertlens-probe-") as folder:
        work = checked.out or Path(folder)  # without out: no resume, nothing left behind
        result = run_linguistic_suite(encoder, splits, default_cache_dir(checked.cache_dir), config,
                                      datasets_dir=work / "datasets", checkpoint_dir=work / "tasks",
                                      progress=progress)  # fmt: skip
    outcome = ProbeRun(result, checked)
    if checked.out is not None:
        outcome.save(checked.out)
    return outcome


def probe(**options: Any) -> ProbeRun:
    """Probe every layer of a model with the linguistic suite: the keywords are `bertlens probe`'s long flags (see
    `ProbeOptions`)."""
    return python_call(ProbeOptions, run_probe_command, options)
