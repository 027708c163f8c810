"""`postprocess` as one definition: its options, their checks, the fit, and the result a notebook reads.

    import bertlens
    fitted = bertlens.postprocess(task="stsb", steps="whiten", recipe="out/sweep/recipe.json")
    fitted.save("out/whitened")        # postprocess.safetensors + recipe.json, for `bertlens embed --recipe`

`bertlens postprocess --task stsb --steps whiten --out DIR` parses its flags into the same `PostprocessOptions` and
calls the same `run_postprocess_command`.
"""

from __future__ import annotations

import dataclasses
import html
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.recipe_options import RecipeOptions, recipe_of
from bertlens.api.results import RowsResult, save_options
from bertlens.api.sources import TextSourceOptions
from bertlens.io.run_context import check_seed
from bertlens.progress import Progress, silent

if TYPE_CHECKING:
    from bertlens.representation.postprocess import PostProcessor
    from bertlens.representation.recipe import Recipe

FILE = "postprocess.safetensors"


@dataclass(frozen=True, kw_only=True)
class PostprocessOptions(RecipeOptions, TextSourceOptions):
    """Every option of `bertlens postprocess`, by the name of its long flag; the texts: `TextSourceOptions`; the
    recipe whose vectors are fitted: `RecipeOptions`."""

    steps: str = "whiten"
    """comma list: center, whiten[:K], abtt[:D], normalize"""
    seed: int = 0
    """seed for sampling, splits, initialisation and data order"""
    out: Path | None = None
    """directory for postprocess.safetensors and recipe.json (required on the command line; from Python, None keeps
    the fit in memory until save())"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> PostprocessOptions:
        """Every check that needs no model, in the options' own names."""
        from bertlens.representation.postprocess import parse_steps

        finite(self)
        one_of(self)
        self.check_texts()
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        check_seed(self.seed)
        parse_steps(self.steps)
        return dataclasses.replace(self, out=Path(self.out)) if self.out is not None else self


@dataclass(frozen=True)
class PostprocessRun(RowsResult):
    """A fitted post-processor and the recipe that applies it; `save(dir)` writes postprocess.safetensors and
    recipe.json (what `bertlens postprocess --out DIR` writes), which `bertlens embed --recipe` reads."""

    fitted: PostProcessor
    recipe: Recipe  # the recipe with max_length resolved, without the post-processor (save() adds it by file name)
    texts: int
    source: str
    options: PostprocessOptions

    def rows(self) -> list[dict]:
        fitted = self.fitted
        return [{"steps": fitted.name, "texts": self.texts, "source": self.source, "dim": fitted.dim,
                 "output_dim": fitted.output_dim}]  # fmt: skip

    def save(self, out: str | Path) -> dict[str, Path]:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        self.fitted.save(out / FILE)
        self.recipe.replace(postprocess=FILE).save(out / "recipe.json")
        return {"postprocess": out / FILE, "recipe": out / "recipe.json", "options": save_options(out, self.options)}

    def __repr__(self) -> str:
        f = self.fitted
        return (
            f"PostprocessRun({f.name} fitted on {self.texts} texts from {self.source}, {f.dim} -> {f.output_dim} dims)"
        )

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(repr(self))}</p>"


def run_postprocess_command(options: PostprocessOptions, *, progress: Progress = silent) -> PostprocessRun:
    """Check the options (before any model loads), embed the texts with the recipe, and fit the steps on them."""
    from bertlens.api.sources import load_texts
    from bertlens.embedding.embedder import Embedder
    from bertlens.representation.postprocess import PostProcessor, parse_steps

    checked = options.check()
    recipe = recipe_of(checked).replace(postprocess=None)
    texts, source, _ = load_texts(checked, checked.seed)
    embedder = Embedder(recipe, trust_remote_code=checked.trust_remote_code, device=checked.device)
    vectors = embedder.encode(texts, progress)  # [N, D]
    fitted = PostProcessor.fit(parse_steps(checked.steps), vectors)
    outcome = PostprocessRun(
        fitted, recipe.replace(max_length=embedder.encoder.max_length), len(texts), source, checked
    )
    if checked.out is not None:
        outcome.save(checked.out)
    return outcome


def postprocess(**options: Any) -> PostprocessRun:
    """Fit post-processing steps (whitening, all-but-the-top, centring) on a recipe's vectors of your texts: the
    keywords are `bertlens postprocess`'s long flags (see `PostprocessOptions`); the texts may be given as a list."""
    return python_call(PostprocessOptions, run_postprocess_command, options)
