"""Restoring device dumps (`--npu-vs-npu restored`, the default device-vs-device compare) from original shapes a
dump may carry: ones that do not fit the stored shape, zero or enormous dimensions, a rank the layout has no family
for, FRACTAL_Z groups that do not divide N, the two sides' original shapes differing, empty tensors. Every op gets its
row: compared, or failed naming the file and what is wrong; never a crash, a traceback or a stopped run."""

from __future__ import annotations

import csv
import subprocess
import sys

import numpy as np

import dumpcmp
from dumpcmp import TensorData

T = 1700000000000000


def _cases(rng: np.random.Generator) -> list[tuple[str, TensorData, TensorData, bool]]:
    """(name, left, right, compared when restored)"""
    f16 = rng.standard_normal((1, 2, 5, 5, 16)).astype(np.float16)
    nz = rng.standard_normal((3, 2, 16, 16)).astype(np.float32)
    fz = rng.standard_normal((9, 2, 16, 16)).astype(np.float16)
    out = []
    for orig, fits in [((1, 40, 5, 5), False), ((1, 20, 6, 5), False), ((0, 20, 5, 5), False),
                       ((1, 20, 5, 5, 2), False), ((20,), False), ((), True), ((2 ** 40, 20, 5, 5), False),
                       ((1, 2 ** 62, 1, 1), False), ((1, 1), False), ((1, 20, 5, 5), True), ((1, 32, 5, 5), True)]:
        t = TensorData(f16, format="NC1HWC0", original_shape=orig)
        out.append(("nc1hwc0_" + "x".join(map(str, orig)), t, t, fits))
    for orig, fits in [((20, 50), False), ((1,), False), ((0, 0), False), ((32, 48), True), ((18, 40), True)]:
        t = TensorData(nz, format="FRACTAL_NZ", original_shape=orig)
        out.append(("nz_" + "x".join(map(str, orig)), t, t, fits))
    for sub, fits in [(0, True), (3, False), (7, False)]:
        t = TensorData(fz, format="FRACTAL_Z", original_shape=(20, 3, 3, 3), sub_format=sub)
        out.append((f"fz_groups{sub}", t, t, fits))
    out.append(("original_differs", TensorData(f16, format="NC1HWC0", original_shape=(1, 20, 5, 5)),
                TensorData(f16, format="NC1HWC0", original_shape=(1, 18, 5, 5)), False))
    b = rng.random((1, 1, 2, 2, 32)) > 0.5
    out.append(("bool_bad", TensorData(b, format="NC1HWC0", original_shape=(1, 40, 2, 2)),
                TensorData(b, format="NC1HWC0", original_shape=(1, 40, 2, 2)), False))
    empty = TensorData(np.zeros((1, 0, 5, 5, 16), np.float16), format="NC1HWC0", original_shape=(1, 0, 5, 5))
    out.append(("empty", empty, empty, True))
    return out


def test_every_op_gets_its_row(tmp_path):
    cases = _cases(np.random.default_rng(0))
    for side in ("l", "r"):
        (tmp_path / side).mkdir()
    for k, (name, left, right, _) in enumerate(cases, start=1):
        for side, t in (("l", left), ("r", right)):
            dumpcmp.write_dump(tmp_path / side / f"Op.{name}.{k}.{T}", op_name=name, outputs=[t], dump_time=T)
    out = subprocess.run([sys.executable, "-m", "dumpcmp", "compare", "-l", str(tmp_path / "l"), "-r",
                          str(tmp_path / "r"), "-o", str(tmp_path / "r.csv")], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    with (tmp_path / "r.csv").open(encoding="utf-8") as f:
        rows = {r["NPUDump"]: r for r in csv.DictReader(f)}
    assert set(rows) == {c[0] for c in cases}
    for name, _, _, fits in cases:
        reason = rows[name]["CompareFailReason"]
        if fits:
            assert reason == "" or name == "empty", (name, reason)
            continue
        assert rows[name]["MaxAbsoluteError"] == "NaN", name
        if name == "original_differs":
            assert "original shape [1, 20, 5, 5]" in reason and "original shape [1, 18, 5, 5]" in reason
        else:
            assert f"Op.{name}." in reason and "original shape" in reason, (name, reason)


def test_random_original_shapes_never_crash(tmp_path):
    """Random original shapes on both sides of fractal tensors: each row compared with as many elements as the
    original shape holds, or failed saying why."""
    rng = np.random.default_rng(7)
    for side in ("l", "r"):
        (tmp_path / side).mkdir()
    shapes = {}
    for k in range(60):
        fmt = ("NC1HWC0", "FRACTAL_NZ", "FRACTAL_Z")[k % 3]
        stored = {"NC1HWC0": (2, 2, 3, 3, 16), "FRACTAL_NZ": (2, 3, 16, 16), "FRACTAL_Z": (4, 2, 16, 16)}[fmt]
        orig = tuple(int(d) for d in rng.integers(0, 40, rng.integers(0, 6)))
        shapes[f"op{k}"] = orig
        t = TensorData(rng.standard_normal(stored).astype(np.float16), format=fmt, original_shape=orig)
        for side in ("l", "r"):
            dumpcmp.write_dump(tmp_path / side / f"Op.op{k}.{k + 1}.{T}", op_name=f"op{k}", outputs=[t], dump_time=T)
    result = dumpcmp.compare(tmp_path / "l", tmp_path / "r")
    assert len(result.rows) == 60
    for row in result.rows:
        if row.result is None:
            assert row.failed and f"Op.{row.npu_dump}." in row.fail_reason, row.fail_reason
        else:
            orig = shapes[row.npu_dump]
            assert row.result.count in (int(np.prod(orig)), int(np.prod(row.shape))), (orig, row.result.count)
