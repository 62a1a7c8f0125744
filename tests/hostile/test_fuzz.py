"""A short run of the mutated-dump harness (tests/hostile/fuzz_harness.py) in a child process: 0 findings, no signal,
no hang: DUMPCMP_FUZZ_CASES cases (default 3000, seconds), and at scale in the slow suite (`python -m pytest -m
slow`: DUMPCMP_FUZZ_CASES there too, default 20000); `python tests/hostile/fuzz_harness.py --cases 100000` is the
long run. Each finding is kept as native/fuzz/regressions/dump/* and replayed below for good."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "fuzz_harness.py"
KEPT = HERE.parents[1] / "native" / "fuzz" / "regressions" / "dump"


def test_mutated_dumps_through_every_entry_point(tmp_path):
    run_harness(tmp_path, int(os.environ.get("DUMPCMP_FUZZ_CASES", "3000")))


@pytest.mark.slow
def test_mutated_dumps_at_scale(tmp_path):
    run_harness(tmp_path, int(os.environ.get("DUMPCMP_FUZZ_CASES", "20000")))


def run_harness(tmp_path, cases: int) -> None:
    seed = int(os.environ.get("DUMPCMP_FUZZ_SEED", "13"))
    env = dict(os.environ, PYTHONWARNINGS="ignore", DUMPCMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, str(HARNESS), "--cases", str(cases), "--seed", str(seed), "--work",
                           str(tmp_path / "work"), "--keep", str(tmp_path / "findings")],
                          capture_output=True, text=True, env=env, timeout=max(600, cases // 10))
    if proc.returncode not in (0, 1):
        current = tmp_path / "work" / "current"
        pytest.fail(f"the harness died with code {proc.returncode} on the input kept in {current} "
                    f"({current.stat().st_size if current.exists() else '?'} bytes):\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout)
    assert result["cases"] == cases and result["opened"] > cases // 10 and result["compared"] > 0
    assert result["findings"] == [], json.dumps(result["findings"][:3], indent=1)


@pytest.mark.parametrize("path", sorted(KEPT.glob("*")), ids=lambda p: p.name)
def test_kept_inputs_replay_cleanly(tmp_path, path):
    proc = subprocess.run([sys.executable, str(HARNESS), "--replay", str(path), "--work", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode == 0, proc.stderr[-3000:]
