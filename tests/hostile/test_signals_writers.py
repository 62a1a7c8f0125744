"""Signals at every stage of every writer (issue #33): real `python -m dumpcmp` processes of the writers get SIGINT
or SIGTERM after delays spread over their run (start-up included). Each time: exit code 0 (finished), 2, 130 or 143;
no traceback; no SIGABRT / SIGSEGV; no temporary (.dumpcmp-*.tmp) left in the output's folder; the output absent or
whole (over an older output with --force: always whole, never missing). The short sweep runs by default, the long one
is marked slow. Each sweep prints its figures (interrupts per writer, failures by class).

Some classes belong to another fix (the C++ worker threads of `compare` aborting; a signal during start-up, while
modules are imported: a KeyboardInterrupt traceback, NumPy's ImportError): when they are the only failures the test is
an expected failure naming the figures, and it passes once they are gone. A crash (SIGSEGV, SIGABRT) anywhere else is
a failure: the children run with faulthandler, so its report carries every thread's Python stack. (The crashes once
tolerated at start-up, "SIGABRT at start-up" and golden's "crash at start-up", and extract's SIGSEGV, were a signal's
exception raised inside an extension module's import, onnx's: tests/hostile/test_signals_extension_import.py.)"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import dumpcmp  # noqa: E402
from dumpcmp.cli.demo import build_model  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402
from dumpcmp.support.files import is_temp_name  # noqa: E402

from helpers.signal_sweep import dumpcmp_frames  # noqa: E402

SRC = str(Path(dumpcmp.__file__).parents[1])
ENV = {**os.environ, "PYTHONPATH": SRC}
KNOWN_ELSEWHERE = {"SIGABRT in compare", "traceback at start-up"}


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    base = tmp_path_factory.mktemp("signals")
    model = build_model(base / "demo_net.onnx")
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(base / "x.npy", x)
    sim = simulate(model, base / "dump", samples=[{"input": x}])
    dump_golden(model, {"input": x}, base / "gt")
    run = next(p for p in (base / "dump").rglob("*") if p.is_dir() and any(q.is_file() for q in p.iterdir()))
    return {"base": base, "model": model, "dump": base / "dump", "json": sim.json_path, "gt": base / "gt",
            "x": base / "x.npy", "run": run}


def writers(net):
    """name -> (argv after `dumpcmp` with {out} for the output, the output's name, replaced with --force?)"""
    common = ["-l", str(net["dump"]), "-r", str(net["gt"]), "-f", str(net["json"])]
    return {
        "compare -o csv": (["compare", *common, "--quiet", "--force", "-o", "{out}"], "table.csv", True),
        "compare -d": (["compare", *common, "-d", "conv2", "--force", "-o", "{out}"], "detail", True),
        "report": (["report", *common, "--force", "-o", "{out}"], "report.html", True),
        "histogram": (["histogram", str(net["run"]), "--quiet", "-o", "{out}"], "hist", False),
        "extract": (["extract", str(net["model"]), "--start", "conv2", "--end", "add1", "-l", str(net["dump"]),
                     "-f", str(net["json"]), "-o", "{out}"], "sub", False),
        "golden": (["golden", str(net["model"]), "-i", str(net["x"]), "--quiet", "--force", "-o", "{out}"], "gt",
                   True),
        "simulate": (["simulate", str(net["model"]), "-i", str(net["x"]), "-o", "{out}"], "npu", False),
        "convert": (["convert", "-type", "offline", "-target", "numpy", "-i", str(net["run"]), "--force", "-o",
                     "{out}"], "npy", True),
    }


def tree(path: Path) -> dict[str, int]:
    """relative name -> size (-1 for a folder) of everything under `path` (or `path` itself)."""
    if path.is_file():
        return {".": path.stat().st_size}
    out = {}
    for root, dirs, files in os.walk(path):
        for n in dirs:
            out[os.path.relpath(os.path.join(root, n), path)] = -1
        for n in files:
            out[os.path.relpath(os.path.join(root, n), path)] = os.path.getsize(os.path.join(root, n))
    return out


def shape(path: Path, stamped: bool) -> set[str]:
    """What must match a reference run: names (timestamped folder names reduced to their depth) and empty/non-empty."""
    t = tree(path)
    if stamped:
        t = {re.sub(r"\d", "#", k): v for k, v in t.items()}
    return {f"{k}:{v != 0}" for k, v in t.items()}


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a test run from a shell's background has SIGINT ignored


def run(argv, out):
    # faulthandler: a crash prints every thread's Python stack (the evidence of where it happened)
    cmd = [sys.executable, "-X", "faulthandler", "-m", "dumpcmp", *[a.replace("{out}", str(out)) for a in argv]]
    return cmd


def sweep(net, tmp_path, steps: int) -> tuple[dict, Counter, list[str]]:
    figures: dict[str, Counter] = {}
    failures: Counter = Counter()
    examples: list[str] = []
    for name, (argv, out_name, forced) in writers(net).items():
        stamped = name in ("extract", "simulate", "golden")  # names holding the time of the run
        ref_dir = tmp_path / f"ref-{name.replace(' ', '_')}"
        ref_dir.mkdir()
        t0 = time.monotonic()
        p = subprocess.run(run(argv, ref_dir / out_name), env=ENV, capture_output=True, text=True, timeout=600)
        length = time.monotonic() - t0
        assert p.returncode == 0, (name, p.stderr)
        want = shape(ref_dir / out_name, stamped)
        tally = figures.setdefault(name, Counter())
        for k in range(steps):
            for sig in (signal.SIGINT, signal.SIGTERM):
                delay = length * (k + 0.5) / steps
                work = tmp_path / f"w-{name.replace(' ', '_')}-{k}-{int(sig)}"
                work.mkdir()
                out = work / out_name
                if forced:  # an older whole output to replace: it must never go missing or be mixed
                    src = ref_dir / out_name
                    shutil.copytree(src, out) if src.is_dir() else shutil.copy2(src, out)
                proc = subprocess.Popen(run(argv, out), env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        text=True, preexec_fn=default_sigint)
                time.sleep(delay)
                proc.send_signal(sig)
                try:
                    _, err = proc.communicate(timeout=600)
                except subprocess.TimeoutExpired:  # pragma: no cover
                    proc.kill()
                    _, err = proc.communicate()
                    err = "HANG " + err
                code = proc.returncode
                tally["interrupts"] += 1
                tally[f"exit {code}"] += 1
                problems = []
                if err.startswith("HANG"):
                    problems.append("hang")
                if code in (-signal.SIGABRT, -signal.SIGSEGV, 128 + signal.SIGABRT, 128 + signal.SIGSEGV):
                    aborted = code in (-signal.SIGABRT, 128 + signal.SIGABRT)
                    problems.append("SIGABRT in compare" if name.startswith("compare") and aborted
                                    else f"crash {code}")
                elif code in (-signal.SIGINT, -signal.SIGTERM):
                    tally["killed before the handlers were installed"] += 1  # the default action: nothing written
                elif code == 1 and "Traceback" in err:
                    pass  # counted below with the traceback's class
                elif code not in (0, 2, 130, 143) and not problems:
                    problems.append(f"exit {code}")
                if "Traceback" in err and not dumpcmp_frames(err):
                    # the interpreter's own start-up, before any of dumpcmp's code (runpy, site, the package's first
                    # lines): its handling, tolerated and counted apart as tests/hostile/test_signals_compare.py does
                    tally["interpreter's start-up"] += 1
                elif "Traceback" in err:
                    # a signal while modules are imported: a KeyboardInterrupt (or Terminated) traceback, or NumPy's
                    # ImportError when it lands inside NumPy's own import
                    startup = "importlib" in err or "ImportError" in err or "args.run" not in err
                    problems.append("traceback at start-up" if startup else "traceback")
                left = [n for n in os.listdir(work) if is_temp_name(n)]
                if out.is_dir():
                    left += [n for n in os.listdir(out) if is_temp_name(n) or n.endswith(".tmp")]
                if left:
                    problems.append("temporary left")
                if out.exists():
                    got = shape(out, stamped)
                    if got and got != want:
                        problems.append("partial output")
                        err += f" [missing {sorted(want - got)[:4]}, extra {sorted(got - want)[:4]}]"
                elif forced:
                    problems.append("old output lost")
                if code == 0 and not out.exists():
                    problems.append("exit 0 without output")
                for cls in problems:
                    key = f"{name}: {cls}"
                    failures[cls if cls in KNOWN_ELSEWHERE else key] += 1
                    if len(examples) < 6:
                        shown = err[:1500] if "Fatal Python error" in err else err[-600:]  # a crash: its top frames
                        examples.append(f"{name} {sig.name} after {delay:.2f}s: {cls}, exit {code}: {shown}")
                shutil.rmtree(work, ignore_errors=True)
    return figures, failures, examples


def check(figures, failures, examples, label):
    total = sum(t["interrupts"] for t in figures.values())
    print(f"\n{label}: {total} interrupts; " + "; ".join(f"{n}: {dict(t)}" for n, t in figures.items()))
    print(f"{label} failures by class: {dict(failures) or 'none'}")
    ours = {k: v for k, v in failures.items() if k not in KNOWN_ELSEWHERE}
    assert not ours, (ours, examples)
    if failures:
        pytest.xfail(f"only the start-up classes remain: {dict(failures)}; first: {examples[:1]}")


def test_signals_short_sweep(net, tmp_path):
    check(*sweep(net, tmp_path, 2), "short sweep")


@pytest.mark.slow
def test_signals_long_sweep(net, tmp_path):
    check(*sweep(net, tmp_path, 12), "long sweep")
