"""The `dumpcmp` command line: argparse lives only here. In: the words the user typed. Out: a call of the library
with plain values, its printed result and the exit code (0 done, 1 a gate failed, 2 bad input).

`dispatch` parses and dispatches (one module a sub-command, registered in `COMMANDS`); `options` holds the options the
commands share.
"""

from dumpcmp.cli.dispatch import COMMANDS, EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, build_parser, main, run

__all__ = ["COMMANDS", "EXIT_BAD_INPUT", "EXIT_FAILURE", "EXIT_OK", "build_parser", "main", "run"]
