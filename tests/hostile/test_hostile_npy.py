"""A .npy header whose shape holds booleans (`(True, 2)`): NumPy reads True as 1, the size check passes, and mapping
the file then failed with a TypeError traceback. Every reader of .npy files (info, compare's ground truth, golden's
-i) refuses it with a message naming the file."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from helpers.hostile import DUMP_NAME, GT_NAME, dump_bytes, npy_header


def run(*argv, cwd):
    proc = subprocess.run([sys.executable, "-m", "dumpcmp", *map(os.fspath, argv)], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode >= 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc


@pytest.mark.parametrize("shape", ["(True, 2)", "(True,)", "(2, False)"])
def test_npy_shape_holding_a_boolean(tmp_path, shape):
    gt = tmp_path / "gt"
    gt.mkdir()
    npy = gt / GT_NAME
    npy.write_bytes(npy_header(shape) + b"\0" * 8)
    says = f"{npy}: its header's shape {shape} holds something other than whole numbers"
    proc = run("info", npy, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip() == f"dumpcmp: error: {says}"
    # compare: the tensor fails with the reason, the run goes on
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / DUMP_NAME).write_bytes(dump_bytes())
    proc = run("compare", "-l", tmp_path / "dev", "-r", gt, "-o", tmp_path / "r.csv", cwd=tmp_path)
    assert proc.returncode in (0, 1) and says in proc.stdout + proc.stderr
    assert says in (tmp_path / "r.csv").read_text()


def test_golden_input_npy_with_a_boolean_in_its_shape(tmp_path):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y]),
                                opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    npy = tmp_path / "x.npy"
    npy.write_bytes(npy_header("(True, 2)") + np.zeros(2, np.float32).tobytes())
    proc = run("golden", tmp_path / "m.onnx", "-i", npy, "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith(f"dumpcmp: error: {npy}: its header's shape (True, 2)")
