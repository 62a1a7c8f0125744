"""Send SIGINT or SIGTERM to a real `python -m dumpcmp ...` process after a delay and classify how it ended (issue
#33's writers sweeps). Whatever the moment: exit 128 + signal with one line, or 0; never a crash, a hang or a
traceback of dumpcmp's code. A signal before dumpcmp's first lines meets the interpreter's own handling (the process
dies by the signal, or Python reports KeyboardInterrupt in its start-up imports): counted apart, tolerated."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import dumpcmp

SRC = Path(dumpcmp.__file__).resolve().parents[1]
_INIT = Path(dumpcmp.__file__).resolve()
_FIRST = next((n for n, line in enumerate(_INIT.read_text().splitlines(), 1) if "command_start" in line), 0)


def env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(SRC))


def dumpcmp_frames(stderr: str) -> list[str]:
    """Frames of dumpcmp's code in a traceback (not the package's first lines, which run under Python's handlers)."""
    frames = []
    for path, line, function in re.findall(r'File "([^"]*/dumpcmp/[^"]*)", line (\d+), in (\S+)', stderr):
        if (path == str(_INIT) and int(line) <= _FIRST) or (path.endswith("command_start.py")
                                                            and function == "<module>"):
            continue
        frames.append(f"{path}:{line} {function}")
    return frames


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a test run in a shell's background has SIGINT ignored


def timed_run(args: list[str]) -> float:
    """Seconds a whole uninterrupted run takes (to spread the delays over its stages; nothing asserted on it)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "dumpcmp", *args], env=env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return time.perf_counter() - start


def interrupt(args: list[str], sig: int, delay: float) -> tuple[str, str]:
    """Run `dumpcmp args`, send `sig` after `delay` s: (outcome class, description); AssertionError when wrong."""
    proc = subprocess.Popen([sys.executable, "-m", "dumpcmp", *args], env=env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
    time.sleep(delay)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"{signal.Signals(sig).name} after {delay * 1000:.0f} ms: hangs") from None
    rc = proc.returncode
    where = f"{signal.Signals(sig).name} after {delay * 1000:.0f} ms: exit {rc}\n{err[-3000:]}"
    assert rc not in (-signal.SIGABRT, -signal.SIGSEGV, -signal.SIGBUS), where
    if rc == 1 and err.strip().splitlines()[-1:] and err.strip().splitlines()[-1].startswith("ImportError"):
        # KNOWN, left to the start-up work (cli/dispatch.py): the signal's exception raised inside a C extension's
        # import (NumPy's import of datetime) comes out as an ImportError traceback; counted apart
        return "ImportError traceback (signal inside an import)", where
    if "Traceback" in err or "Fatal Python error" in err:
        assert not dumpcmp_frames(err), where
        assert rc in (-sig, 1), where
        return "interpreter's start-up", where
    if rc == -sig:
        assert err == "", where
        return "killed by the signal", where
    if rc == 0:
        return "finished", where
    assert rc == 128 + sig, where
    assert len(err.strip().splitlines()) == 1, where
    return "interrupted", where


def temporaries(*folders: Path) -> list[str]:
    """The safe writer's temporaries (.dumpcmp-*.tmp) left anywhere under `folders`."""
    return [os.path.join(r, n) for f in folders if f.exists() for r, ds, fs in os.walk(f) for n in ds + fs
            if n.startswith(".dumpcmp-") and n.endswith(".tmp")]


def fake_command_child(body: str, *, as_command: bool = False) -> str:
    """Source of a child process (`python -c`) whose dumpcmp runs the command `fake`: the `run(args)` that `body`
    defines (with the imports it needs), registered as dispatch's only command. `as_command`: the process is the
    `dumpcmp` command itself (argv[0] `dumpcmp`, so command_start's handlers are on) and ends through
    `dispatch.run()`; else `sys.exit(main(["fake"]))`. The dumpcmp the tests import comes first on sys.path."""
    head = "import os, sys\n"
    if as_command:
        head += 'sys.argv = ["dumpcmp", "fake"]  # this process is the command (command_start.is_command)\n'
    head += f"sys.path.insert(0, {str(SRC)!r})\n"
    tail = (
        "import dumpcmp.cli.dispatch as _cli\n\n"
        "class _Fake:\n"
        "    @staticmethod\n"
        "    def add_parser(sub):\n"
        '        sub.add_parser("fake").set_defaults(run=run)\n\n'
        'sys.modules["fake_command"] = _Fake\n'
        '_cli.COMMANDS = {"fake": "fake_command"}\n'
        + ("_cli.run()\n" if as_command else 'sys.exit(_cli.main(["fake"]))\n'))
    return head + textwrap.dedent(body) + "\n" + tail
