"""The device-vs-device mode (`npu_vs_npu`) travels to a Dask cluster's workers: with a LocalCluster of two worker
processes (in a child process, as a user's script runs it), each mode's result file is the local run's, byte for
byte, and the two modes' files differ (the dumps hold padded NC1HWC0 and FRACTAL_NZ tensors)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dumpcmp
from dumpcmp import TensorData
from dumpcmp.dumps import layout

pytest.importorskip("distributed")

SRC = str(Path(dumpcmp.__file__).resolve().parents[1])
ENV = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
       "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
T = 1700000000000000


def _dumps(root: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(5)
    for side, scale in (("left", 1.0), ("right", 1.01)):
        (root / side).mkdir(parents=True)
        for k in range(6):
            x = (rng.standard_normal((1, 20, 4, 4)) * scale).astype(np.float16)
            m = (rng.standard_normal((18, 33)) * scale).astype(np.float32)
            dumpcmp.write_dump(root / side / f"Conv2D.op{k}.{k + 1}.{T}", op_name=f"op{k}",
                               inputs=[TensorData(layout.convert(m, "ND", "FRACTAL_NZ"), format="FRACTAL_NZ",
                                                  original_shape=m.shape)],
                               outputs=[TensorData(layout.convert(x, "NCHW", "NC1HWC0"), format="NC1HWC0",
                                                   original_shape=x.shape)], dump_time=T)
    return root / "left", root / "right"


def test_the_mode_travels_to_the_workers(tmp_path: Path) -> None:
    left, right = _dumps(tmp_path / "d")
    script = f"""
import dumpcmp
from dumpcmp.comparison.cluster import connect
if __name__ == "__main__":
    with connect("local:2") as cluster:
        for mode in ("restored", "raw"):
            dumpcmp.compare({str(left)!r}, {str(right)!r}, client=cluster.client, npu_vs_npu=mode).write(
                {str(tmp_path)!r} + "/cluster_" + mode + ".csv")
"""
    (tmp_path / "api.py").write_text(script)
    out = subprocess.run([sys.executable, str(tmp_path / "api.py")], capture_output=True, text=True, env=ENV,
                         timeout=180)
    assert out.returncode == 0, out.stderr
    for mode in ("restored", "raw"):
        dumpcmp.compare(left, right, npu_vs_npu=mode).write(tmp_path / f"local_{mode}.csv")
        assert (tmp_path / f"cluster_{mode}.csv").read_bytes() == (tmp_path / f"local_{mode}.csv").read_bytes()
    assert (tmp_path / "local_raw.csv").read_bytes() != (tmp_path / "local_restored.csv").read_bytes()
