"""bench/bench_cluster.py runs end to end on a tiny model: a loopback cluster started and stopped, figures written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dumpcmp

pytest.importorskip("distributed")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_cluster.py"


def processes_naming(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def test_bench_cluster_smoke(tmp_path):
    keep, figures = tmp_path / "keep", tmp_path / "figures.json"
    src = str(Path(dumpcmp.__file__).resolve().parents[1])  # the installed package (its _core), not the checkout
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(BENCH), "--ops", "60", "--host-ops", "30", "--host-scales", "0.01",
                           "--hosts", "3", "--keep", str(keep), "--json", str(figures)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    got = json.loads(figures.read_text())
    f = got["local_vs_cluster"]
    assert f["identical"] and f["rows"] == 80  # 60 compute ops and 20 TransData dumps
    assert f["tasks"] >= 1 and 0 < f["sent_bytes"] < f["rows"] * 1000
    (h,) = got["hosts"]
    assert h["hosts"] == 3 and h["rows"] == 3 * 40  # every simulated host's device compared
    # each root holds one device, its files hard links of the model's
    roots = sorted((keep / "hosts" / "scale_0.01" / "hosts").iterdir())
    assert [r.name for r in roots] == [f"root{k}" for k in range(1, 4)]
    for k, root in enumerate(roots):
        devices = {p.relative_to(root).parts[1] for p in root.rglob("*") if p.is_file()}
        assert devices == {str(k)}
    assert processes_naming(str(keep)) == []  # the scheduler and every worker stopped
