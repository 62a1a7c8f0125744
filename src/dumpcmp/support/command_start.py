"""The `dumpcmp` command's signals before its main() unwinds them: Ctrl-C or SIGTERM/SIGHUP while the package and the
command's modules load (100 ms and more) ends the process at once, with one line and exit code 128 + the signal's
number, instead of a KeyboardInterrupt traceback out of an import.

`begin()` runs when this module is imported, first thing in the package's __init__ (only when this process is the
command: `python -m dumpcmp` or the `dumpcmp` script; a program importing dumpcmp keeps its own handlers), and again
in the command's entry. Nothing has been written yet at that stage, so there is nothing to clean up. main() calls
`end()` once it can unwind (its handlers remove every temporary file on the way out); after main() returns,
`finish()`: a signal during the interpreter's own exit then ends it quietly too. Signals during the interpreter's
start-up, before any of dumpcmp's code runs, are the interpreter's (a signal's default action, or its own message).
"""

from __future__ import annotations

import os
import sys

# the interpreter's own signal module: `signal` builds its enums on import (milliseconds before begin() could run)
import _signal as signal

__all__ = ["begin", "end", "finish", "is_command", "stop"]

# the handler each signal had before begin() replaced it
_replaced: dict[int, object] = {}


def is_command() -> bool:
    """This process is the `dumpcmp` command: `python [options] -m dumpcmp ...` or a script named dumpcmp."""
    words = list(getattr(sys, "orig_argv", []))[1:]
    while words:
        word = words.pop(0)
        if word.startswith("-m"):
            return (word[2:] or (words[0] if words else "")) == "dumpcmp"
        if word in ("-X", "-W"):  # the interpreter's options that take a value
            words = words[1:]
        elif word in ("-", "-c") or not word.startswith("-"):
            break
    return bool(sys.argv) and os.path.basename(sys.argv[0]) == "dumpcmp"


def _set(sig: int, handler: object) -> bool:
    """signal.signal, False off the main thread (where no handler can be set); threading is not imported for it:
    this module loads first, and every import before begin() is time a signal would find the default handlers."""
    try:
        signal.signal(sig, handler)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def stop(signum: int) -> None:
    """End the process at once: the signal's one line, exit code 128 + its number (nothing left to clean up)."""
    text = "interrupted" if signum == signal.SIGINT else f"stopped by signal {signum}"
    try:
        os.write(2, f"dumpcmp: {text}\n".encode())
    finally:
        os._exit(128 + signum)


def _quit(signum: int, frame: object) -> None:
    stop(signum)


def begin() -> None:
    """From now on SIGINT, SIGTERM and SIGHUP end the process at once (those still at their default: a signal the
    parent set to be ignored stays ignored). Main thread of the command only."""
    try:
        if not is_command():
            return
        for sig, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL),
                             (signal.SIGHUP, signal.SIG_DFL)):
            now = signal.getsignal(sig)
            if now is _quit or now == default:
                if not _set(sig, _quit):
                    return
                _replaced.setdefault(sig, default)
    except KeyboardInterrupt:  # a Ctrl-C before SIGINT's handler was in place: Python's default handler raised it
        if is_command():
            stop(signal.SIGINT)
        raise


def finish() -> None:
    """After main() returned: SIGINT, SIGTERM and SIGHUP (not ignored ones) end the process at once, quietly, while
    the interpreter exits, with one line (nothing is left to clean up; run() flushed what main() printed)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) != signal.SIG_IGN and not _set(sig, _quit):
            return


def end() -> None:
    """Hand the signals begin() took back to the handlers they had (then the command installs its own)."""
    while _replaced:
        sig, handler = _replaced.popitem()
        if signal.getsignal(sig) is _quit:
            _set(sig, handler)


begin()  # on import: the package's __init__ imports this module first
