"""`dumpcmp convert -d DIR -f NCHW -t bin` (issue #38) stopped by SIGTERM or SIGINT at spread delays in a real
process: exit 0, 2, 130 or 143 (or killed before the handlers exist), no traceback from the run, no temporary file
left, and the output folder either absent or holding every file (the run's files appear together)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import dumpcmp
from dumpcmp.dumps.dump import TensorData
from dumpcmp.support.files import is_temp_name
from helpers import layout_reference as ref
from helpers.signal_sweep import dumpcmp_frames

SRC = str(Path(dumpcmp.__file__).parents[1])
T0 = 1700000000000000


def test_signals_leave_all_or_nothing(tmp_path):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    x = np.random.default_rng(1).standard_normal((1, 20, 64, 64)).astype(np.float32)
    stored = ref.loops_nc1hwc0(x, 16)
    for i in range(24):
        dumpcmp.write_dump(dumps / f"Conv2D.conv{i}.{i}.{T0}", op_name=f"conv{i}",
                           outputs=[TensorData(stored, format="NC1HWC0", original_shape=x.shape)])
    argv = [sys.executable, "-m", "dumpcmp", "convert", "-d", str(dumps), "-f", "NCHW", "-t", "bin"]
    full = subprocess.run([*argv, "-out", str(tmp_path / "full")], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SRC})
    assert full.returncode == 0, full.stderr
    whole = sorted(os.listdir(tmp_path / "full"))
    assert len(whole) == 24
    figures = {"finished": 0, "stopped": 0}
    for n, delay in enumerate([0.05 * k for k in range(1, 17)]):
        out = tmp_path / f"out{n}"
        proc = subprocess.Popen([*argv, "-out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "PYTHONPATH": SRC})
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM if n % 2 else signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        # killed by the default action before dumpcmp's handlers are installed (nothing written) counts as stopped;
        # a traceback is tolerated only at start-up, while modules are imported (tests/hostile/test_signals_writers);
        # a SIGINT inside the interpreter's own start-up (runpy's imports, before any of dumpcmp's code: a loaded host
        # makes that last past 50 ms) is Python's handling: exit 1 with a traceback holding no dumpcmp frame
        interpreter = proc.returncode == 1 and "Traceback" in err and not dumpcmp_frames(err)
        assert interpreter or proc.returncode in (0, 2, 130, 143, -signal.SIGINT, -signal.SIGTERM), \
            (delay, proc.returncode, err)
        assert "Traceback" not in err or "args.run" not in err, err
        left = sorted(os.listdir(out)) if out.exists() else []
        assert not [f for f in left if is_temp_name(f) or f.endswith(".tmp")], left
        assert left in ([], whole), (delay, left)
        figures["finished" if left else "stopped"] += 1
        assert not [f for f in os.listdir(tmp_path) if is_temp_name(f)]
    print(figures)
