"""The `bertlens` command: one subcommand per module; every failure becomes one line and exit 1.

A BertlensError is the user's to fix and is printed as it is. Any other exception (a file
system error, a library's ValueError) is still one line naming the command and the error;
`--debug` (or BERTLENS_DEBUG=1) shows the traceback for a bug report.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import math
import os
import sys
import warnings

from bertlens.cli.commands import COMMANDS
from bertlens.cli.derived import CommandLine
from bertlens.cli.needs import check_extras
from bertlens.errors import BertlensError, OptionError
from bertlens.io.atomic import check_out_dir
from bertlens.io.run_context import check_seed
from bertlens.version import __version__

NEGATIVE_VALUE_OPTIONS = ("--layers",)  # take values such as '-4:' that argparse would read as flags
# whole-number options every command reads the same way: name -> (lowest, why); checked before any work
INTEGER_FLOORS = {
    "max_examples": (1, "leave it out for no limit"),
    "folds": (2, "cross-validation needs two folds or more"),
    "ray_workers": (1, "a Ray pool has one actor or more"),
    "max_texts": (1, "leave it out for every text"),
    "max_dev": (1, "leave it out for the whole dev split"),
    "max_tokens": (1, "leave it out for the whole corpus"),
    "drift_texts": (2, "a per-layer CKA compares two texts or more"),
}


class VersionAction(argparse.Action):
    """`--version`: bertlens' version and the versions of the stack it runs on, read from the installed packages'
    metadata (no import: `bertlens --version` stays as quick as `--help`)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(stack_versions())
        parser.exit(0)


def stack_versions() -> str:
    """'bertlens X (torch Y, transformers Z, ...)': what a bug report needs to reproduce a run."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for package in ("torch", "transformers", "huggingface_hub", "tokenizers", "sentence-transformers"):
        try:
            found.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            continue
    return f"bertlens {__version__} ({', '.join(found)}; Python {sys.version.split()[0]})"


class Parser(argparse.ArgumentParser):
    """argparse's own complaints (an unknown flag, a missing value) as one line and exit 1, like every other error."""

    def error(self, message: str):
        self.exit(1, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """bertlens' own flags and one light stub per command (`bertlens --help` lists them without importing any):
    each command's own flags are parsed by the parser cyclopts derives from its options (cli/derived.py)."""
    parser = Parser(prog="bertlens", description="Find and serve the right BERT representation for a task.")
    parser.add_argument("--version", action=VersionAction, help="the version of bertlens and of the stack it runs on")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an unexpected error")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, summary in COMMANDS.items():
        subparsers.add_parser(name, help=summary, add_help=False)
    return parser


def requested_command(argv: list[str]) -> str | None:
    """The subcommand named on the command line (the first word that is one), if any."""
    return next((token for token in argv if token in COMMANDS), None)


def join_negative_values(argv: list[str]) -> list[str]:
    """'--layers -4:' -> '--layers=-4:', so the documented form works (argparse takes '-4:' for an option)."""
    out: list[str] = []
    for token in argv:
        if out and out[-1] in NEGATIVE_VALUE_OPTIONS and token.startswith("-") and not token.startswith("--"):
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def check_arguments(args: argparse.Namespace) -> None:
    """What every command's numbers and output must be, before any work: finite numbers (argparse reads 'nan' and
    'inf' as floats), a --max-length a model can use, an --out directory that can be written."""
    for name, value in vars(args).items():
        if isinstance(value, float) and not math.isfinite(value):
            raise BertlensError(f"--{name.replace('_', '-')} must be a finite number, got {value}")
    max_length = getattr(args, "max_length", None)
    if max_length is not None and max_length < 2:
        raise BertlensError(f"--max-length must be at least 2 tokens, got {max_length}")
    if getattr(args, "seed", None) is not None:
        check_seed(args.seed)
    for name, (lowest, why) in INTEGER_FLOORS.items():
        value = getattr(args, name, None)
        if value is not None and value < lowest:
            raise BertlensError(f"--{name.replace('_', '-')} must be at least {lowest} ({why}), got {value}")
    if getattr(args, "resamples", None) is not None:
        from bertlens.metrics.bootstrap import check_resamples

        check_resamples(args.resamples)
    check_extras(args)
    if getattr(args, "out_is_dir", False) and getattr(args, "out", None) is not None:
        check_out_dir(args.out)


def parse_command_line(argv: list[str]) -> argparse.Namespace:
    """The command line as the namespace its command checks and runs from. bertlens' own flags are argparse's; the
    command's are parsed by the parser cyclopts derives from its options (its module's COMMAND). --help and
    argparse's errors raise SystemExit; a derived parser's errors are BertlensErrors."""
    command = requested_command(argv)
    if command is None:  # `bertlens`, `bertlens --help`, `bertlens --version`, or an unknown command
        return build_parser().parse_args(argv)
    split = argv.index(command) + 1
    derived = importlib.import_module(f"bertlens.cli.{command}").COMMAND
    return derived_arguments(derived, argv[split:], build_parser().parse_args(argv[:split]))


def derived_arguments(command: CommandLine, argv: list[str], args: argparse.Namespace) -> argparse.Namespace:
    """A derived command's options as the namespace every command is checked and run from: the options by name (the
    shared checks and the extras table read them so), its output directory checked, and `run` bound to them."""
    from bertlens.cli.derived import parse_options

    options = parse_options(command, argv).check()  # every check that needs no data, before anything loads
    module = importlib.import_module(f"bertlens.cli.{command.name}")
    return argparse.Namespace(
        **{f.name: getattr(options, f.name) for f in dataclasses.fields(options)},
        command=command.name,
        debug=args.debug,
        out_is_dir=command.out_is_dir,
        on_interrupt=command.on_interrupt,
        run=lambda _: module.run(options),
    )


def user_words(error: BertlensError) -> str:
    """An error in the command line's words: an option named as its flag (`max_examples` -> `--max-examples`)."""
    return error.as_flags() if isinstance(error, OptionError) else str(error)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    argv = join_negative_values(sys.argv[1:] if argv is None else list(argv))
    command = requested_command(argv)
    try:
        args = parse_command_line(argv)
    except SystemExit as done:  # --help, --version (0) or a line from Parser.error (1): the code, not an exception
        return done.code if isinstance(done.code, int) else 1
    except BertlensError as exc:
        print(f"bertlens {command}: error: {user_words(exc)}", file=sys.stderr)
        return 1
    debug = args.debug or os.environ.get("BERTLENS_DEBUG") == "1"
    # a library warning (e.g. whitening dropping constant directions) reaches users as one line, not a code excerpt
    warnings.formatwarning = lambda message, category, *rest, **kw: f"bertlens {args.command}: warning: {message}\n"
    try:
        check_arguments(args)
        args.run(args)
    except BertlensError as exc:
        print(f"bertlens {args.command}: error: {user_words(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        what = getattr(args, "on_interrupt", "interrupted; rerun the same command to resume")
        print(f"bertlens {args.command}: {what}", file=sys.stderr)
        return 130
    except Exception as exc:
        if debug:
            raise
        detail = " ".join(str(exc).split()) or type(exc).__name__
        print(
            f"bertlens {args.command}: unexpected error: {type(exc).__name__}: {detail} "
            "(rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
