"""The `dumpcmp` command: the parser and the dispatcher. Each sub-command lives in its own module of this package and
registers itself through `COMMANDS`: a module with `add_parser(subparsers)` and `run(args) -> int`.

Errors about the user's input (DumpcmpError, OSError on their files) print one line and exit with code 2.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from typing import NoReturn, Sequence

from dumpcmp.errors import DumpcmpError

# sub-command name -> module; each module keeps its heavy imports inside run() so `dumpcmp --help` stays fast
COMMANDS = {
    "acl-json": "dumpcmp.cli.acl_json",
    "bench": "dumpcmp.cli.bench",
    "bisect": "dumpcmp.cli.bisect",
    "compare": "dumpcmp.cli.compare",
    "convert": "dumpcmp.cli.convert",
    "debug-config": "dumpcmp.cli.debug_config",
    "demo": "dumpcmp.cli.demo",
    "diff": "dumpcmp.cli.diff",
    "extract": "dumpcmp.cli.extract",
    "file_compare": "dumpcmp.cli.file_compare",
    "golden": "dumpcmp.cli.golden",
    "histogram": "dumpcmp.cli.histogram",
    "info": "dumpcmp.cli.info",
    "locate": "dumpcmp.cli.locate",
    "overflow": "dumpcmp.cli.overflow",
    "report": "dumpcmp.cli.report",
    "sample": "dumpcmp.cli.sample",
    "shape": "dumpcmp.cli.shape",
    "simulate": "dumpcmp.cli.simulate",
    "view": "dumpcmp.cli.view",
}

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command's parser. Given the sub-command about to run, only that one gets its options (the others are
    bare names): building all of them takes several times as long as one, on every run
    (docs/performance.md#design-measurements)."""
    from dumpcmp import __version__

    parser = argparse.ArgumentParser(
        prog="dumpcmp",
        description="Find where a neural network loses accuracy: compare accelerator dumps with ground truth.",
    )
    parser.add_argument("--version", action="version", version=f"dumpcmp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module_name in COMMANDS.items():
        if command is None or name == command:
            importlib.import_module(module_name).add_parser(sub)
        else:
            sub.add_parser(name)
    return parser


def run() -> NoReturn:
    """The `dumpcmp` command itself: main() in a process of its own, whose exit code it becomes.

    What the imports made (NumPy's and our modules' objects) lives as long as the process, so it is frozen out of
    the garbage collector's passes first (gc.freeze): no collection walks it again, the one at interpreter exit
    included, which takes a noticeable part of each run (docs/performance.md#design-measurements). main() alone, as the
    tests call it, freezes nothing.
    """
    from dumpcmp.support import command_start

    command_start.begin()  # already, when the package loaded as the command; a signal until main() unwinds: one line
    gc.freeze()
    code = main()
    try:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()  # what the command printed is out before a signal could end the process at once
            except (OSError, ValueError):
                pass
        if code > 128:
            # stopped by a signal, temporaries removed: end here. Python 3.11 may end the process by SIGINT itself
            # after the line printed, when the KeyboardInterrupt came through certain interpreter paths while a
            # command imported its modules (it remembers an "unhandled" KeyboardInterrupt that main() did handle; 2
            # of 150 interrupts there): the exit code is 128 + the signal's number however it came
            os._exit(code)
        command_start.finish()  # the interpreter's exit (atexit, joining threads) ends quietly on a signal too
    except KeyboardInterrupt as signalled:  # Terminated too: a signal after main() returned, before finish()
        from dumpcmp.support.files import interrupted_by

        command_start.stop(interrupted_by(signalled) or 2)
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None) -> int:
    from dumpcmp.support import command_start
    from dumpcmp.support.files import (Terminated, install_signal_cleanup, interrupted_by, remove_leftovers,
                                       signals_met)
    from dumpcmp.support.textout import escape_unencodable

    escape_unencodable(sys.stdout, sys.stderr)  # names from files: escapes, never a UnicodeEncodeError
    signals_at_start = signals_met()
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        # inside the try: a signal that comes while the handlers are put in place unwinds as any other (a SIGTERM
        # between installing SIGTERM's handler and SIGHUP's was a Terminated traceback, 1 in a few hundred sweeps)
        command_start.end()  # from here a signal unwinds (below) instead of ending the process at once
        install_signal_cleanup()  # SIGTERM / SIGHUP unwind like Ctrl-C: no temporary file is left behind
        from dumpcmp.cli.original_flags import original_words

        words = original_words(words)  # the original tool's spellings (compare -m -g ..., convert -d ...)
        parser = build_parser(words[0] if words and words[0] in COMMANDS else None)  # imports the command's modules
        args = parser.parse_args(words)
        return int(args.run(args) or 0)
    except Terminated as stop:
        remove_leftovers()
        print(f"dumpcmp: stopped by signal {stop.signum}", file=sys.stderr)
        return 128 + stop.signum
    except DumpcmpError as error:
        print(f"dumpcmp: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # pragma: no cover - `dumpcmp info ... | head`
        return EXIT_OK
    except OSError as error:
        print(f"dumpcmp: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        remove_leftovers()
        print("dumpcmp: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        # a signal whose exception some code lost and replaced by its own error, without a chain (an ImportError of
        # an extension module's initialisation, a RuntimeError of a descriptor's __set_name__, NumPy's TypeError):
        # after a signal met during this command, any such error is the signal's; otherwise it is a bug (traceback)
        signum = interrupted_by(error, since=signals_at_start, kinds=(Exception,))
        if signum is None:
            raise
        remove_leftovers()
        print("dumpcmp: interrupted" if signum == 2 else f"dumpcmp: stopped by signal {signum}", file=sys.stderr)
        return 128 + signum
