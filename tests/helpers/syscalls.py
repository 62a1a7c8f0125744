"""System calls a snippet of Python makes, counted by strace in a child process (the kernel's own count: #35's
"one open per file" findings are held by these). `strace_path()` is None where strace is missing; tests skip then."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile


def strace_path() -> str | None:
    return shutil.which("strace")


def count_syscalls(code: str, calls: tuple[str, ...], *, threads: bool = True) -> dict[str, int]:
    """How many of each of `calls` the child `python -c code` made (children and threads followed with `threads`),
    only those made after the snippet prints the marker line `-- start --` to stdout (so the interpreter's start
    and imports do not count)."""
    import dumpcmp

    src = os.path.dirname(os.path.dirname(os.path.abspath(dumpcmp.__file__)))  # the dumpcmp this test runs
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory(prefix="dumpcmp-strace-") as tmp:
        log = os.path.join(tmp, "trace")
        trace = ",".join(calls + ("write",))
        args = [strace_path() or "strace", *(["-f"] if threads else []), "-e", f"trace={trace}", "-o", log,
                sys.executable, "-c", "import sys\n" + code]
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        counts = dict.fromkeys(calls, 0)
        started = False
        with open(log, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not started:
                    started = "-- start --" in line and "write(" in line
                    continue
                for call in calls:
                    if f" {call}(" in line or line.startswith(f"{call}(") or f"<... {call} resumed>" in line:
                        if "resumed>" not in line:
                            counts[call] += 1
                        break
        assert started, "the snippet never printed the marker"
        return counts
