"""`sweep --model A --model B ...` (`bertlens.sweep(models=[...])`): the same task swept with every model, their
prices measured on the task's texts, one leaderboard across models and the choice of a (model, reading).

Every model is loaded before any encoding, so a model that cannot be loaded (missing, a decoder, a tokenizer that
fails) is one line naming it, and two names for the same weights are refused; each model then sweeps the task as its
single-model sweep would (its own cached bank: adding a model encodes only that one), and experiments/sweep/across.py
pairs them.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bertlens.api.results import RowsResult, save_options
from bertlens.errors import BertlensError, OptionError, literal
from bertlens.progress import Progress


def model_names(model, models) -> tuple[str, ...]:
    """`model` (one name, or several from the command line or Python) and `models` (Python) as one tuple of names;
    both given, or a name given twice, is one line."""
    named = [model] if isinstance(model, str) else list(model or ())
    if models is not None and named and named != ["default"]:
        raise OptionError("give the models as {model} or as {models}, not both", "model", "models")
    names = tuple(str(m) for m in (models if models is not None else named))
    repeated = [n for n in names if names.count(n) > 1]
    if repeated:
        raise OptionError(f"{{model}} {literal(repeated[0])} is given twice; give each model once", "model")
    return names


@dataclass(frozen=True)
class ModelsSweepRun(RowsResult):
    """A finished sweep across models: the chosen recipe, every model's rows (each naming its model), the
    quality-against-speed picture, and `save(dir)` writing what `bertlens sweep --model A --model B` writes."""

    result: Any  # CrossModelResult
    options: Any  # SweepOptions

    @property
    def recipe(self):
        """The chosen (model, reading)'s recipe: what `embed`, `index`, `serve` and `export` take."""
        return self.result.chosen.recipe

    @property
    def recommended(self) -> str:
        pick = self.result.picks[self.result.choice.chosen]
        return f"{pick.model} {pick.candidate}"

    @property
    def runs(self) -> dict[str, Any]:
        """Each model's own sweep result, by model."""
        return {r.model: r for r in self.result.results}

    def rows(self) -> list[dict]:
        from bertlens.reports.models import cross_rows

        return cross_rows(self.result)

    def models(self) -> list[dict]:
        """Per model: its own and best reading with their scores, and its measured price."""
        from bertlens.reports.models import model_rows

        return model_rows(self.result)

    def plot(self):
        """Quality against speed (a matplotlib Figure)."""
        from bertlens.reports.models import picture_figure

        return picture_figure(self.result)

    def save(self, out: str | Path) -> dict[str, Path]:
        from bertlens.reports.models import write_models_outputs

        out = Path(out)
        return {**write_models_outputs(self.result, out), "options": save_options(out, self.options)}

    def __repr__(self) -> str:
        return f"ModelsSweepRun(task={self.result.results[0].task!r}, models={len(self.result.results)}, " + (
            f"recommended={self.recommended!r})"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
                r["model"], r["best_reading"], f"{r['best_value']:.4f}", f"{r['texts_per_s']:,.0f}",
                "chosen" if r["chosen"] else "")) + "</tr>"
            for r in self.models()
        )  # fmt: skip
        head = "".join(f"<th>{h}</th>" for h in ("model", "best reading", self.result.metric, "texts/s", ""))
        return (
            f"<div><p>recommended <b>{html.escape(self.recommended)}</b>: {html.escape(self.result.choice.rule)}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>"
        )


def loaded_models(options, prepare: Callable) -> list[tuple[Any, Any]]:
    """(base recipe, encoder) of every model, each loaded before any encoding; one line for a model that cannot be
    loaded (naming it) and for two names of the same weights."""
    loaded, seen = [], {}
    for name in options.model_names:
        try:
            loaded.append(prepare(replace(options, model=name)))
        except BertlensError as error:
            raise BertlensError(f"--model {name}: {error}") from None
        ref = loaded[-1][1].ref
        if ref.fingerprint in seen:
            raise BertlensError(
                f"--model {name} and --model {seen[ref.fingerprint]} are the same weights (fingerprint "
                f"{ref.fingerprint[:12]}); give each model once"
            )
        seen[ref.fingerprint] = name
    return loaded


def truncation_notes(task, loaded) -> tuple[str, ...]:
    """Texts longer than one model's limit and not another's are cut per model: said, with the counts."""
    texts = task.all_texts() if task.collection is None else list(task.collection.documents)
    counts = [(encoder.ref.name, encoder.max_length, encoder.tokenize(texts).truncated) for _, encoder in loaded]
    if len({n for _, _, n in counts}) <= 1:
        return ()
    said = "; ".join(f"{name}: {n} of {len(texts)} texts over its {limit} tokens" for name, limit, n in counts)
    return (f"texts are cut at each model's own limit, so the models read different lengths of some texts ({said})",)


def run_across_models(options, task, notify, progress: Progress, prepare: Callable, sweep_one: Callable):
    """Every model loaded, then priced on the task's texts (a budget no model meets stops here, before any
    encoding), then each one's sweep of `task`, combined (experiments/sweep/across.py)."""
    from bertlens.experiments.sweep.across import Budget, check_budget, combine, meets_any
    from bertlens.experiments.sweep.price import measure_price, price_sample

    budget = Budget(options.min_texts_per_second, options.max_latency_ms, options.prefer)
    check_budget(budget)
    loaded = loaded_models(options, prepare)
    notes = truncation_notes(task, loaded)
    texts = task.all_texts() if task.collection is None else list(task.collection.documents)
    sample = price_sample(texts, options.seed)
    # the encoding dominates a reading's cost, so a model is timed once, on its own reading; its pick's width below
    prices = [measure_price(base.replace(max_length=encoder.max_length), sample, str(encoder.device))
              for base, encoder in loaded]  # fmt: skip
    meets_any(budget, prices)
    results = []
    for number, (base, encoder) in enumerate(loaded, start=1):
        notify(f"model {number} of {len(loaded)}: {encoder.ref.name}")
        results.append(sweep_one(replace(options, model=encoder.ref.name), task, base, encoder, progress))
    prices = [
        replace(price, dim=result.recommended.width(encoder.hidden_size))
        for price, result, (_, encoder) in zip(prices, results, loaded, strict=True)
    ]
    combined = combine(results, prices, budget, options.resamples, options.seed)
    return replace(combined, notes=(*notes, *combined.notes))
