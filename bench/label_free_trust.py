"""Issue #27 acceptance: how far the label-free choice can be trusted, over every catalog task x three models.

    .venv/bin/python bench/label_free_trust.py run [--max-examples 2000]    # one sweep per cell, resumable
    .venv/bin/python bench/label_free_trust.py analyse                      # choose the combined form, print tables
    .venv/bin/python bench/label_free_trust.py run --models all-mpnet-base-v2 # base size (make base-model first)
    .venv/bin/python bench/label_free_trust.py analyse --cells-of all-mpnet-base-v2   # its cells, the shipped form

`run` writes one .npz per (model, task) under bench/out/label_free/ (each cell's label-free components per
subsample, the labelled protocol's per-candidate validation and test scores and its per-example outputs).
`analyse` chooses the combined score's form on the labelled *validation* scores (dev, or inner dev under
cross-validation) of every cell, never on test: the form whose pick has the smallest mean validation regret
(its validation score minus the best validation score), ties by mean validation Spearman. It also reports the
form chosen leaving each task out, then judges the chosen form's pick on the test scores.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bertlens.metrics.bootstrap import paired_difference, spearman
from bertlens.probing.label_free import COMPONENTS, combine, oriented
from common import REPO

OUT = REPO / "bench" / "out" / "label_free"
MODELS = {
    "default": "default",
    "paraphrase-minilm-l3-v2": str(REPO.parent / "shared" / "models" / "paraphrase-minilm-l3-v2"),
    "tiny-raw-bert": str(REPO.parent / "shared" / "models" / "tiny-raw-bert"),
}
CHOSEN_ON = tuple(MODELS)  # the models whose cells chose the combined form (the default of --models)
BASE_SIZE = (
    Path(os.environ.get("BERTLENS_CACHE") or Path.home() / ".cache" / "bertlens") / "models" / "all-mpnet-base-v2"
)
MODELS["all-mpnet-base-v2"] = str(BASE_SIZE)  # 12 x 768, by `make base-model`: its cells are read with the shipped form
TASKS = ("trec", "sst2", "mr", "subj", "stsb", "movie_reviews", "cranfield", "cisi", "npl")


def run_cell(model: str, task_name: str, max_examples: int) -> None:
    from bertlens.encoding.encoder import Encoder
    from bertlens.experiments.sweep import SweepConfig, run_sweep
    from bertlens.representation.recipe import Recipe
    from bertlens.tasks.catalog import data_dir, get_task
    from bertlens.tasks.loaders import load_catalog_task

    path = OUT / f"{model}__{task_name}.npz"
    if path.exists():
        return
    task = load_catalog_task(get_task(task_name), data_dir(), max_examples=max_examples, seed=0)
    encoder = Encoder(MODELS[model], precision="auto", attentions="cls")
    main = task.kind.main_protocol
    start = time.perf_counter()
    result = run_sweep(
        task, encoder, Recipe(model=MODELS[model]), None, SweepConfig(protocols=(main, "label_free"), resamples=1000)
    )
    seconds = time.perf_counter() - start
    labelled, scores = result.protocols[main], result.label_free
    trust = result.trust
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez(
        path.with_suffix(".partial.npz"),
        free_names=np.array([c.name for c in scores.candidates]),
        widths=np.array([c.width(encoder.hidden_size) for c in scores.candidates]),
        single=np.array([c.mixer == "single" for c in scores.candidates]),
        **{f"c_{name}": scores.components[name] for name in COMPONENTS},
        names=np.array([c.name for c in labelled.candidates]),
        validation=labelled.validation,
        test=labelled.test.value,
        tied=labelled.test.tied_with_best,
        best=labelled.test.best,
        outputs=labelled.outputs,
        gold=labelled.gold if labelled.gold is not None else np.array([]),
        metric=labelled.metric,
        num_layers=encoder.num_layers,
        settling=json.dumps([vars(s) for s in trust.settling]) if trust else "[]",
        seconds=seconds,
        timings=json.dumps(result.timings),
    )
    path.with_suffix(".partial.npz").rename(path)
    print(f"{model} {task_name}: {seconds:.0f} s, pick {trust.pick if trust else '-'}", flush=True)


def _load(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _pick(cell: dict, combined: np.ndarray) -> str:
    value = np.nanmean(combined, axis=1)
    order = sorted(
        (i for i in range(len(value)) if np.isfinite(value[i])),
        key=lambda i: (-round(value[i], 6), cell["widths"][i], not cell["single"][i]),
    )
    return str(cell["free_names"][order[0]])


def _components(cell: dict) -> dict[str, np.ndarray]:
    return {name: cell[f"c_{name}"] for name in COMPONENTS}


def _labelled(cell: dict, which: str) -> tuple[np.ndarray, np.ndarray]:
    """(label-free index, labelled index) of the candidates both score; and the labelled values (validation|test)."""
    index = {str(n): i for i, n in enumerate(cell["names"])}
    common = [k for k, n in enumerate(cell["free_names"]) if str(n) in index]
    return np.array(common), np.array([cell[which][index[str(cell["free_names"][k])]] for k in common])


def _form_rho(cells: list[dict], form: dict[str, float], which: str) -> float:
    rhos = []
    for cell in cells:
        common, labelled = _labelled(cell, which)
        combined = np.nanmean(combine(_components(cell), form), axis=1)[common]
        keep = np.isfinite(combined) & np.isfinite(labelled)
        rhos.append(float(spearman(combined[keep], labelled[keep])))
    return float(np.nanmean(rhos))


def _form_regret(cells: list[dict], form: dict[str, float], which: str) -> float:
    """Mean over cells of (the pick's labelled score - the best labelled score), on `which` scores."""
    regrets = []
    for cell in cells:
        pick = _pick(cell, combine(_components(cell), form))
        values = cell[which]
        regrets.append(float(values[[str(n) for n in cell["names"]].index(pick)] - np.nanmax(values)))
    return float(np.mean(regrets))


def _criterion(cells: list[dict], form: dict[str, float]) -> tuple[float, float]:
    return _form_regret(cells, form, "validation"), _form_rho(cells, form, "validation")


def _forms() -> list[dict[str, float]]:
    singles = [{name: 1.0} for name in COMPONENTS]
    pairs = [{a: 1.0, b: 1.0} for a, b in itertools.combinations(COMPONENTS, 2)]
    return singles + pairs + [dict.fromkeys(COMPONENTS, 1.0)]


def _describe(form: dict[str, float]) -> str:
    return " + ".join(form)


def analyse(cells_of: str | None = None) -> None:
    paths = sorted(OUT.glob("*__*.npz"))
    cells = {p.stem: _load(p) for p in paths if not p.stem.endswith(".partial")}
    if cells_of is not None:  # one model's cells, read with the form the library ships (never re-chosen on them)
        from bertlens.probing.label_free import COMBINED

        mine = {k: v for k, v in cells.items() if k.split("__")[0] == cells_of}
        if not mine:
            raise SystemExit(f"no cells of {cells_of} yet: run `bench/label_free_trust.py run --models {cells_of}`")
        _table(mine, sorted(mine), COMBINED)
        return
    cells = {k: v for k, v in cells.items() if k.split("__")[0] in CHOSEN_ON}
    if not cells:
        raise SystemExit("no cells yet: run `bench/label_free_trust.py run` first")
    keys = sorted(cells)
    forms = _forms()
    every = [cells[k] for k in keys]
    ranked = sorted(forms, key=lambda f: tuple(-x for x in _criterion(every, f)))
    chosen = ranked[0]
    print("## Forms, by the mean validation regret of their pick over every cell (then mean validation Spearman)\n")
    print("| form | mean regret (validation) | mean rho (validation) | mean regret (test) | mean rho (test) |")
    print("|---|---|---|---|---|")
    for form in ranked:
        print(
            f"| {_describe(form)} | {_form_regret(every, form, 'validation'):+.4f} | "
            f"{_form_rho(every, form, 'validation'):+.3f} | {_form_regret(every, form, 'test'):+.4f} | "
            f"{_form_rho(every, form, 'test'):+.3f} |"
        )
    tasks = sorted({k.split("__")[1] for k in keys})
    print("\n## Leave one task out: the form chosen without it\n")
    for task in tasks:
        rest = [cells[k] for k in keys if k.split("__")[1] != task]
        best = max(forms, key=lambda f: _criterion(rest, f))
        print(f"- without {task}: {_describe(best)}")
    print(f"\n## Chosen form: {_describe(chosen)}\n")
    _table(cells, keys, chosen)


def _table(cells: dict, keys: list[str], form: dict[str, float]) -> None:
    header = "| model | task | " + " | ".join(COMPONENTS) + " | combined | pick | vs best [95% CI] | vs last [95% CI] |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    hits_last = hits_best = 0
    for key in keys:
        cell = cells[key]
        model, task = key.split("__")
        common, test = _labelled(cell, "test")
        rhos = []
        for name in COMPONENTS:
            values = oriented(name, np.nanmean(cell[f"c_{name}"], axis=1))[common]
            keep = np.isfinite(values) & np.isfinite(test)
            rhos.append(float(spearman(values[keep], test[keep])))
        combined_all = combine(_components(cell), form)
        combined = np.nanmean(combined_all, axis=1)[common]
        keep = np.isfinite(combined) & np.isfinite(test)
        rhos.append(float(spearman(combined[keep], test[keep])))
        pick = _pick(cell, combined_all)
        names = [str(n) for n in cell["names"]]
        last = f"mean/L{int(cell['num_layers'])}"
        gold = cell["gold"] if cell["gold"].size else None
        metric = str(cell["metric"])
        regrets = []
        for reference in (names[int(cell["best"])], last):
            pair = cell["outputs"][[names.index(reference), names.index(pick)]]
            regrets.append(paired_difference(pair, gold, metric, resamples=1000, seed=0))
        within_best = bool(cell["tied"][names.index(pick)])
        not_below_last = regrets[1][2] >= 0
        hits_best += within_best
        hits_last += not_below_last
        print(
            f"| {model} | {task} | "
            + " | ".join(f"{r:+.2f}" for r in rhos)
            + f" | `{pick}` | {regrets[0][0]:+.4f} [{regrets[0][1]:+.4f}, {regrets[0][2]:+.4f}]"
            + (" within" if within_best else " outside")
            + f" | {regrets[1][0]:+.4f} [{regrets[1][1]:+.4f}, {regrets[1][2]:+.4f}]"
            + (" not below" if not_below_last else " below")
            + " |"
        )
    n = len(keys)
    print(
        f"\nPick at least as good as the last layer: {hits_last}/{n} = {hits_last / n:.0%} (target >= 80%); "
        f"within the best's interval: {hits_best}/{n} = {hits_best / n:.0%} (target >= 50%)"
    )
    print("\n## Labels that settle the choice (share of 5 draws tied with the full-label best)\n")
    for key in keys:
        settling = json.loads(str(cells[key]["settling"]))
        print(f"- {key.replace('__', ' / ')}: " + ", ".join(f"{s['labels']}: {s['within_best']:.0%}" for s in settling))


def main() -> None:
    warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)  # undefined candidates stay NaN
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("run", "analyse"))
    parser.add_argument("--max-examples", type=int, default=2000, help="per split, a seeded sample (as --max-examples)")
    parser.add_argument("--models", default=",".join(CHOSEN_ON))
    parser.add_argument("--cells-of", help="analyse: only this model's cells, with the library's combined form")
    parser.add_argument("--tasks", default=",".join(TASKS))
    args = parser.parse_args()
    if args.action == "analyse":
        analyse(args.cells_of)
        return
    for task in args.tasks.split(","):
        for model in args.models.split(","):
            run_cell(model, task, args.max_examples)


if __name__ == "__main__":
    main()
