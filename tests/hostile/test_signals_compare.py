"""SIGINT and SIGTERM sent to `dumpcmp compare` at every stage, from the interpreter's start-up to its exit: the
process ends with exit code 130 (SIGINT) or 143 (SIGTERM) and one line, or finishes (0); never SIGABRT ("terminate
called without an active exception": the interpreter finalized while the engine's C++ threads ran) or SIGSEGV, never a
traceback of dumpcmp's code, never a hang, no temporary file left in the output folder.

Before any of dumpcmp's code runs (the interpreter's own start-up, ~20 ms) a signal meets the interpreter's handling:
the default action (the process dies by the signal, nothing printed) or, for SIGINT, Python's own KeyboardInterrupt
report of its start-up imports. Those are counted apart and tolerated: no frame of theirs is dumpcmp's.
"""

from __future__ import annotations

import shutil
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest

from dumpcmp.benchmark.model import generate_model

from helpers.signal_sweep import interrupt, timed_run

ONE_LINE = {signal.SIGINT: "dumpcmp: interrupted", signal.SIGTERM: "dumpcmp: stopped by signal 15"}


# An editable install that rebuilds the core on import (docs/development.md's `editable.rebuild=true`) runs CMake in
# every child as it starts: a signal then reaches the build too, which prints its own errors. What this suite checks
# is the command as installed (CI's `pip install .`); there it runs.
pytestmark = pytest.mark.skipif(any(getattr(f, "rebuild_flag", False) for f in sys.meta_path),
                                reason="an editable install rebuilding the core on import: signals reach its build")


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Iterator[tuple[Path, Path]]:
    folder = tmp_path_factory.mktemp("model")
    yield generate_model(folder, ops=60, bytes_per_side=160 << 20)
    shutil.rmtree(folder)  # 250 MB: not left for pytest's rotation


def _interrupt(model: tuple[Path, Path], out: Path, sig: int, delay: float) -> str:
    """Run compare, send `sig` after `delay` seconds (helpers.signal_sweep.interrupt); the outcome's class, or an
    AssertionError. Beyond the sweep's checks: nothing but the result is left in the output folder, and the one line
    is the signal's own."""
    dump, gt = model
    outcome, where = interrupt(["compare", "-l", str(dump), "-r", str(gt), "-o", str(out / "result.csv"), "--force",
                                "--quiet"], sig, delay)
    leftovers = [p.name for p in out.iterdir() if p.name != "result.csv"]
    assert not leftovers, f"{where}\nleft {leftovers}"
    if outcome == "interrupted":
        assert where.split("\n", 1)[1].strip() == ONE_LINE[sig], where
        return f"exit {128 + sig}"
    return outcome


def _sweep(model, tmp_path, delays) -> Counter:
    seen: Counter = Counter()
    for k, delay in enumerate(delays):
        out = tmp_path / f"out{k % 4}"
        out.mkdir(exist_ok=True)
        seen[_interrupt(model, out, signal.SIGINT if k % 2 == 0 else signal.SIGTERM, delay)] += 1
    print(dict(seen))
    return seen


def _run_seconds(model, tmp_path) -> float:
    dump, gt = model
    return timed_run(["compare", "-l", str(dump), "-r", str(gt), "-o", str(tmp_path / "whole.csv"), "--quiet"])


def test_signals_during_compare(model, tmp_path):
    whole = _run_seconds(model, tmp_path)
    delays = [whole * (k + 0.5) / 40 for k in range(40)]  # every stage of the run, start-up to exit
    seen = _sweep(model, tmp_path, delays)
    assert seen["exit 130"] + seen["exit 143"] >= 10


def test_signals_during_start_up(model, tmp_path):
    delays = [k * 0.004 for k in range(40)]  # the first 160 ms: the interpreter, the imports, the parser
    seen = _sweep(model, tmp_path, delays)
    assert seen["exit 130"] + seen["exit 143"] >= 10


@pytest.mark.slow
def test_signals_during_compare_long(model, tmp_path):
    whole = _run_seconds(model, tmp_path)
    delays = [whole * (k + 0.5) / 200 for k in range(200)] + [k * 0.001 for k in range(100)]
    _sweep(model, tmp_path, delays)
