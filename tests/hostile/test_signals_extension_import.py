"""A signal while the command imports an extension module (issue #33's long sweep: `extract` ended by SIGSEGV, exit -11
and nothing on stderr, 1 in a few hundred interrupts at start-up). The signal's exception raised the moment onnx's
onnx_cpp2py_export was created, before it was executed, dropped the created module, whose deallocation (pybind11 3's
multi-phase initialisation) dereferences a pointer only its execution sets: SIGSEGV. Raised from the Python code its C
initialisation runs, the exception ended in SIGABRT (std::terminate) or was swallowed (exit 0, the signal lost).

The sweep meets those points by chance; here a real `python -m dumpcmp extract` sends the signal to itself at exactly
that point (tests/helpers/signal_in_import.py as its sitecustomize): it must end with its one line and 128 + the
signal's number, nothing written."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import dumpcmp  # noqa: E402
from dumpcmp.cli.demo import build_model  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402

import helpers.signal_in_import as hook  # noqa: E402

SRC = str(Path(dumpcmp.__file__).parents[1])
MODULE = "onnx.onnx_cpp2py_export"


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    base = tmp_path_factory.mktemp("extimport")
    model = build_model(base / "demo_net.onnx")
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    sim = simulate(model, base / "dump", samples=[{"input": x}])
    site = base / "site"
    site.mkdir()
    shutil.copy(hook.__file__, site / "sitecustomize.py")
    return {"model": model, "dump": base / "dump", "json": sim.json_path, "site": site}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("at", ["created", "exec-1", "exec-2"])
def test_signal_inside_an_extension_modules_import(net, tmp_path, at, sig):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(net["site"]), SRC]), "SIGNAL_IN_IMPORT": MODULE,
           "SIGNAL_NUMBER": str(int(sig)), "SIGNAL_AT": at}
    cmd = [sys.executable, "-X", "faulthandler", "-m", "dumpcmp", "extract", str(net["model"]), "--start", "conv2",
           "--end", "add1", "-l", str(net["dump"]), "-f", str(net["json"]), "-o", str(out)]
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300,
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = p.stderr.strip().splitlines()
    assert lines and lines[0].startswith(f"signal-in-import: signal {int(sig)}"), p.stderr  # it met that point
    assert p.returncode == 128 + sig, (p.returncode, p.stderr)  # -11 (SIGSEGV), 134 (SIGABRT) or 0 before the fix
    assert lines[1:] == ["dumpcmp: interrupted" if sig == signal.SIGINT else f"dumpcmp: stopped by signal {int(sig)}"]
    assert not out.exists() or not any(out.iterdir()), sorted(os.listdir(out))
