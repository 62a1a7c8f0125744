"""The `dumpcmp` command. Each sub-command lives in its own module of this package and registers itself through
`COMMANDS`: a module with `add_parser(subparsers)` and `run(args) -> int`.

Errors about the user's input (DumpcmpError, OSError on their files) print one line and exit with code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from ..errors import DumpcmpError

# sub-command name -> module; each module keeps its heavy imports inside run() so `dumpcmp --help` stays fast
COMMANDS = {
    "acl-json": "dumpcmp.cli.acl_json",
    "bench": "dumpcmp.cli.bench",
    "compare": "dumpcmp.cli.compare",
    "convert": "dumpcmp.cli.convert",
    "demo": "dumpcmp.cli.demo",
    "diff": "dumpcmp.cli.diff",
    "golden": "dumpcmp.cli.golden",
    "histogram": "dumpcmp.cli.histogram",
    "info": "dumpcmp.cli.info",
    "locate": "dumpcmp.cli.locate",
    "report": "dumpcmp.cli.report",
    "sample": "dumpcmp.cli.sample",
    "shape": "dumpcmp.cli.shape",
    "simulate": "dumpcmp.cli.simulate",
    "view": "dumpcmp.cli.view",
}

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


def count(text: str) -> int:
    """argparse type for counts that may be 0 (threads: 0 = all cores): a clear usage error below 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is below 0")
    return value


def positive(text: str) -> int:
    """argparse type for counts of at least 1 (rows per file, ...)."""
    value = count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="dumpcmp",
        description="Find where a neural network loses accuracy: compare accelerator dumps with ground truth.",
    )
    parser.add_argument("--version", action="version", version=f"dumpcmp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except DumpcmpError as error:
        print(f"dumpcmp: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # pragma: no cover - `dumpcmp info ... | head`
        return EXIT_OK
    except OSError as error:
        print(f"dumpcmp: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("dumpcmp: interrupted", file=sys.stderr)
        return 130
