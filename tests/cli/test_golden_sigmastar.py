"""`dumpcmp golden --format sigmastar`: onnx_NHWC_outtensor_dump.bin beside the .npy tree, read back equal to the
.npy files (4-D in NHWC), and usable as the benchmark of `compare` (itself and against the .npy tree)."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp.cli import main
from dumpcmp.dumps.ground_truth import read_golden_index
from dumpcmp.dumps.sigmastar import open_sigmastar
from helpers.hardswish_net import build_hardswish_net


@pytest.fixture
def model(tmp_path):
    return build_hardswish_net(tmp_path / "net.onnx", blocks=1, channels=4, size=8)


def test_golden_sigmastar_round_trip(tmp_path, model, capsys):
    out = tmp_path / "golden"
    assert main(["golden", str(model), "--seed", "0", "-o", str(out), "--format", "sigmastar", "--quiet"]) == 0
    dump = open_sigmastar(out / "onnx_NHWC_outtensor_dump.bin")
    assert dump.is_float
    records = [r for r in read_golden_index(out) if r.file]
    assert [t.name for t in dump.tensors] == [r.tensor_name for r in records]
    assert [t.op_type for t in dump.tensors] == [r.op_type for r in records]
    for t, rec in zip(dump.tensors, records):
        expected = np.load(out / rec.file).astype(np.float32)
        if expected.ndim == 4:
            expected = expected.transpose(0, 2, 3, 1)
        np.testing.assert_array_equal(dump.values(t), expected)
    assert any(len(t.shape) == 4 for t in dump.tensors)
    capsys.readouterr()

    # the dump against the .npy tree: same values once the tree is put in NHWC, every tensor COS 1
    assert main(["compare", "-l", str(out / "onnx_NHWC_outtensor_dump.bin"), "-r", str(out), "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(records)
    assert all("MSE:0.000000    COS:1.000000    RMSE:0.000000" in line for line in lines), lines

    # an existing dump is not replaced without --force; with it, it is
    before = (out / "onnx_NHWC_outtensor_dump.bin").read_bytes()
    assert main(["golden", str(model), "--seed", "1", "-o", str(out), "--format", "sigmastar", "--quiet"]) == 2
    assert "onnx_NHWC_outtensor_dump.bin: already exists" in capsys.readouterr().err
    assert (out / "onnx_NHWC_outtensor_dump.bin").read_bytes() == before
    assert main(["golden", str(model), "--seed", "1", "-o", str(out), "--format", "sigmastar", "--quiet",
                 "--force"]) == 0
    assert (out / "onnx_NHWC_outtensor_dump.bin").read_bytes() != before
