"""A pair too large for memory is read in storage order (#35): its windows sorted by where they are stored, so each
page of a device layout is read from disk once per pass instead of once per row. The windows are still merged in
their own order, so every metric is the same bits as the windows read in order. DUMPCMP_STORAGE_ORDER_BYTES=0 makes
every pair with a layout side take that path (the default: 1 GiB of stored bytes), in a child process (the core reads
the variable once)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dumpcmp

SRC = Path(dumpcmp.__file__).resolve().parents[1]

CHILD = r'''
import json, sys
import numpy as np
from dumpcmp import _core as core
from dumpcmp.dumps import layout as L
from dumpcmp.dumps.dump import TensorData, open_dump, write_dump

tmp = sys.argv[1]
rng = np.random.default_rng(7)
cases = [("NC1HWC0", "NCHW", (2, 37, 19, 23), 512), ("FRACTAL_NZ", "ND", (3, 70, 45), 256),
         ("FRACTAL_NZ", "ND", (64, 4000), 1024), ("NDC1HWC0", "NCDHW", (1, 20, 3, 9, 11), 256),
         ("FRACTAL_Z", "NCHW", (40, 18, 3, 3), 128)]
if sys.argv[2] == "large":  # past the gather-once size (32 M fp16 elements): the KLD pass reads windows too
    cases = [("FRACTAL_NZ", "ND", (64, 1 << 19), 1 << 16)]
out = []
for n, (fmt, plain, shape, chunk) in enumerate(cases):
    truth = rng.standard_normal(shape).astype(np.float32)
    x16 = (truth + rng.standard_normal(shape).astype(np.float32) * 0.01).astype(np.float16)
    path = f"{tmp}/Conv2D.conv{n}.{n + 1}.1700000000000001"
    write_dump(path, op_name=f"conv{n}",
               outputs=[TensorData(L.convert(x16, plain, fmt), format=fmt, original_shape=shape)])
    x = core.compare.source_from_dump(open_dump(path)._file, "output", 0, dst_format=plain, dst_shape=list(shape))
    y = core.compare.source_from_array(truth)
    for metrics in ([1, 2, 3, 5, 6, 7, 8, 9], None):
        for threads in (1, 2):
            r = core.compare.compare_sources(x, y, metrics=metrics, threads=threads, chunk_elements=chunk)
            out.append([fmt, list(shape), threads, [float(r.value(i)).hex() for i in range(10) if i != 5],
                        [float(v).hex() for v in r.standard_deviation], list(r.formatted())])
print(json.dumps(out))
'''


def run_child(tmp: Path, which: str, threshold: str | None) -> list:
    env = {k: v for k, v in os.environ.items() if k != "DUMPCMP_STORAGE_ORDER_BYTES"}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    if threshold is not None:
        env["DUMPCMP_STORAGE_ORDER_BYTES"] = threshold
    folder = tmp / f"{which}-{threshold}"
    folder.mkdir()
    done = subprocess.run([sys.executable, "-c", CHILD, str(folder), which], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_storage_order_gives_the_same_bits_on_every_layout(tmp_path):
    in_order = run_child(tmp_path, "small", None)
    stored = run_child(tmp_path, "small", "0")
    assert len(in_order) == 20
    assert stored == in_order


def test_storage_order_with_the_kld_pass_reading_windows(tmp_path):
    # 33.5 M elements: not gathered once, so both the first pass and the KLD's passes read windows in storage order
    in_order = run_child(tmp_path, "large", None)
    stored = run_child(tmp_path, "large", "0")
    assert stored == in_order


def test_a_bad_threshold_is_the_default(tmp_path):
    assert run_child(tmp_path, "small", "lots") == run_child(tmp_path, "small", None)
