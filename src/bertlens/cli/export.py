"""`bertlens export`: the recipe as an ONNX graph (pooling inside; int8 behind a fidelity gate) or as a
sentence-transformers directory, each checked against bertlens fp32 before anything is written."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import progress_bar, say
from bertlens.cli.options import add_recipe_options, recipe_from_args
from bertlens.cli.sources import add_data_dir_option, add_texts_options, file_texts
from bertlens.embedding.gate import Gate
from bertlens.errors import BertlensError
from bertlens.tasks.catalog import data_dir, get_task

FORMATS = ("onnx", "sentence-transformers")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "export",
        help=COMMANDS["export"],
        description="Export a recipe: --format onnx (one graph from token ids to the final vector; --quantize int8 "
        "behind a fidelity gate) or --format sentence-transformers (a directory SentenceTransformer(path) loads). "
        "The export is compared with bertlens fp32 first; a failed check writes nothing.",
    )
    parser.add_argument("--format", required=True, help=f"{' or '.join(FORMATS)}")
    parser.add_argument("--out", type=Path, required=True, help="directory to write")
    parser.set_defaults(out_is_dir=True)
    add_texts_options(parser, "texts to check parity on (default: 512 STS-B training sentences from --data-dir)")
    parser.add_argument("--samples", type=int, default=512, help="how many texts to check parity on (default 512)")
    parser.add_argument(
        "--quantize",
        choices=("int8", "int8-static"),
        help="onnx: int8 gated by fidelity to fp32; int8 is dynamic (activations scaled per batch), int8-static "
        "calibrates activation ranges on --calibration texts",
    )
    parser.add_argument(
        "--calibration",
        type=Path,
        help="int8: texts to choose fp32 modules on and judge the gate on (default: --texts)",
    )
    parser.add_argument("--gate-mean", type=float, default=Gate.mean_cosine, help="int8 gate: mean cosine to fp32")
    parser.add_argument("--gate-min", type=float, default=Gate.min_cosine, help="int8 gate: minimum cosine to fp32")
    parser.add_argument(
        "--gate-task-drop", type=float, default=Gate.max_task_drop, help="int8 gate with --eval-task: largest drop"
    )
    parser.add_argument("--eval-task", help="int8: also compare the task score (stsb, sst2, trec) with fp32")
    parser.add_argument("--force", action="store_true", help="int8: write it even below the gate (figures recorded)")
    add_data_dir_option(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    add_recipe_options(parser)
    parser.set_defaults(run=run)


def _parity_texts(args: argparse.Namespace) -> tuple[list[str], str]:
    if args.samples < 2:
        raise BertlensError("--samples must be at least 2")
    if args.texts is not None:
        texts = list(dict.fromkeys(file_texts(args.texts, args.column)))
        source = str(args.texts)
    else:
        path = data_dir(args.data_dir) / "stsb" / "train.csv"
        if not path.is_file():
            raise BertlensError(
                f"no parity texts: {path} is missing; give --texts FILE (texts like the ones you embed)"
            )
        with open(path, newline="", encoding="utf-8") as handle:
            texts = list(dict.fromkeys(text for row in csv.reader(handle) for text in row[:2]))
        source = f"STS-B training sentences ({path})"
    if len(texts) < 2:
        raise BertlensError(f"{source}: need at least 2 distinct non-empty texts to check the export")
    return texts[: args.samples], source


def run(args: argparse.Namespace) -> None:
    from bertlens.tasks.loaders import load_catalog_task

    if args.format not in FORMATS:
        raise BertlensError(f"unknown --format '{args.format}': use {' or '.join(FORMATS)}")
    if args.format != "onnx" and (args.quantize or args.calibration or args.eval_task):
        raise BertlensError("--quantize, --calibration and --eval-task apply to --format onnx only")
    gate = Gate(args.gate_mean, args.gate_min, args.gate_task_drop)  # checked before any work
    calibration = None
    if args.calibration is not None:
        calibration = list(dict.fromkeys(file_texts(args.calibration, args.column)))
        if len(calibration) < 4:
            raise BertlensError(
                f"{args.calibration}: {len(calibration)} distinct texts; int8 calibration needs at least 4 "
                "(half choose what stays fp32, half judge the gate)"
            )
    recipe = recipe_from_args(args)
    texts, source = _parity_texts(args)
    if args.format == "sentence-transformers":
        from bertlens.experiments.export_st import run_export_sentence_transformers

        record = run_export_sentence_transformers(recipe, args.out, texts, source)
        say(
            f"sentence-transformers: {' -> '.join(record['modules'])}; max abs diff to bertlens "
            f"{record['parity']['max_abs_diff']:.1e} on {len(texts)} texts"
        )
        say(f"saved {args.out} (SentenceTransformer('{args.out}') loads it without bertlens)")
        return
    from bertlens.experiments.export import Int8Options, run_export_onnx  # the onnx extra: checked before any work

    eval_task = load_catalog_task(get_task(args.eval_task), data_dir(args.data_dir)) if args.eval_task else None
    if eval_task is not None and eval_task.uses_cv:
        raise BertlensError(f"--eval-task '{args.eval_task}' has no test split; use stsb, sst2 or trec")
    with progress_bar("export", unit="steps", enabled=not args.quiet) as update:
        outcome = run_export_onnx(
            recipe,
            args.out,
            texts,
            source,
            int8=Int8Options(args.quantize == "int8-static", calibration, gate, args.force, eval_task)
            if args.quantize is not None
            else None,
            trust_remote_code=args.trust_remote_code,
            progress=update,
        )
    p = outcome.parity
    say(f"onnx fp32 parity on {p.texts} texts: max abs diff {p.max_abs_diff:.1e}, min cosine {p.min_cosine:.7f}")
    if outcome.int8 is not None:
        q = outcome.int8
        kept = ", ".join(outcome.kept_fp32) or "none"
        say(
            f"int8 on {q.texts} held-out calibration texts: mean cosine {q.mean_cosine:.4f}, min {q.min_cosine:.4f} "
            f"(gate {gate.mean_cosine} / {gate.min_cosine}); {outcome.quantized_modules} linear modules int8, "
            f"kept fp32: {kept}" + ("" if outcome.passed else "; BELOW THE GATE, written because of --force")
        )
        if outcome.evaluation is not None:
            ev = outcome.evaluation
            say(
                f"{ev.task} test {ev.metric}: fp32 {ev.teacher[0]:.4f}, int8 {ev.student[0]:.4f}, change "
                f"{ev.difference[0]:+.4f} [{ev.difference[1]:+.4f}, {ev.difference[2]:+.4f}]"
            )
    say(f"saved {args.out} (bertlens embed --backend onnx --model {args.out} ...; figures in export.json)")
