"""bench/bench_histogram.py --pngs (issue #34): the three drawings measured in one run (the one before #34 as the
baseline), their PNG sizes printed, and the folder under /tmp removed. Nothing about speed is asserted."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dumpcmp

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]
SRC = Path(dumpcmp.__file__).resolve().parents[1]


def test_bench_pngs_runs_the_three_drawings_and_cleans_up():
    before = set(glob.glob("/tmp/bench_histogram_*"))
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_histogram.py"), "--pngs", "3", "--old", "2"],
                          env=dict(os.environ, PYTHONPATH=str(SRC)), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for label in ("old drawing (baseline)", "Plotter.draw, one after another", "Plotter with the writer thread"):
        line = next(x for x in lines if x.startswith(label))
        assert " ms a PNG (" in line and "KiB a PNG" in line
    assert "3 PNGs (2 of the baseline), 256 bins" in done.stdout
    assert set(glob.glob("/tmp/bench_histogram_*")) == before
