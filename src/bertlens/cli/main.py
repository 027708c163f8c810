"""The `bertlens` command: one subcommand per module; user errors become one line and exit 1."""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from bertlens import __version__
from bertlens.cli import compare, contrastive, embed, finetune, geometry, longdoc, postprocess, probe, sweep
from bertlens.errors import BertlensError

COMMANDS = (embed, sweep, probe, finetune, compare, geometry, postprocess, contrastive, longdoc)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bertlens", description="Find and serve the right BERT representation for a task.")
    parser.add_argument("--version", action="version", version=f"bertlens {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = build_parser().parse_args(argv)
    # a library warning (e.g. whitening dropping constant directions) reaches users as one line, not a code excerpt
    warnings.formatwarning = lambda message, category, *rest, **kw: f"bertlens {args.command}: warning: {message}\n"
    try:
        args.run(args)
    except BertlensError as exc:
        print(f"bertlens {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"bertlens {args.command}: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
