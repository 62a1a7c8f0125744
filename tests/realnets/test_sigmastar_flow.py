"""#39: SigmaStar's DumpDebug flow end to end on a real network (the PP-OCR direction classifier, MobileNetV3 with
hardswish and squeeze-excite blocks; tests/helpers/realnets.py fetches it), without the SDK: `golden --format
sigmastar` (the original model), `simulate --target sigmastar` (the float and the fixed-point model), then their
compare as the SDK's users run it: the float dump equals the original, the fixed model's own error shows on every
layer (COS below 1, MSE above 0), and a fault planted in one layer of the fixed model is the first layer whose COS
falls and whose "RMSE" jump is flagged, against the float dump and against the original alike."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("onnxruntime")
realnets = pytest.importorskip("helpers.realnets")

from dumpcmp.cli import main  # noqa: E402

LINE = re.compile(r"(\d+)\.(\S+?)\.xx\.output0\s*OP_TYPE:(\S+?)\s*MSE:([\d.]+)\s+COS:(-?[\d.]+)\s+RMSE:([\d.]+)(.*)")
FAULT = "relu_1.tmp_0"  # a ReLU of the second block, 1x24x48x8 in NHWC


def rows(capsys, *args):
    assert main(["compare", *args]) == 0
    out = capsys.readouterr().out.splitlines()
    parsed = [LINE.fullmatch(line) for line in out]
    assert parsed and all(parsed), out[:5]
    return [(m.group(2), float(m.group(4)), float(m.group(5)), float(m.group(6)), "OVER" in m.group(7))
            for m in parsed]


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    model = realnets.realnet_or_skip("ocr_cls")
    shape = realnets.REGISTRY["ocr_cls"].shape_args()
    root = tmp_path_factory.mktemp("sigma")
    common = [str(model), "--seed", "0", "--shape", *shape, "--quiet"]
    assert main(["golden", *common, "--format", "sigmastar", "-o", str(root / "gt")]) == 0
    assert main(["simulate", "--target", "sigmastar", *common, "-o", str(root / "sim")]) == 0
    assert main(["simulate", "--target", "sigmastar", *common, "-o", str(root / "faulty"), "--fault", FAULT,
                 "--fault-scale", "2"]) == 0
    return root


def test_float_equals_the_original_and_the_fixed_model_errs_everywhere(flow, capsys):
    golden = str(flow / "gt" / "onnx_NHWC_outtensor_dump.bin")
    flt = str(flow / "sim" / "float" / "sigma_outtensor_dump.bin")
    fixed = str(flow / "sim" / "fixed" / "sigma_outtensor_dump.bin")
    same = rows(capsys, "-l", flt, "-r", golden)
    assert len(same) > 100
    assert all(cos >= 0.999999 and mse < 1e-9 for _, mse, cos, _, _ in same)
    own = rows(capsys, "-l", fixed, "-r", flt)
    assert len(own) > 100
    assert all(0.99 < cos <= 1.0 for _, _, cos, _, _ in own)  # the quantisation's error: small ...
    computed = [r for r in own if r[1] > 0]
    assert len(computed) > 0.9 * len(own)  # ... and everywhere
    assert sum(1 for r in own if r[2] < 1.0) > 0.5 * len(own)
    assert not any(flag for *_, flag in own)
    # against the original the same picture (the float model is the original)
    against_gt = {name: (mse, cos) for name, mse, cos, _, _ in rows(capsys, "-l", fixed, "-r", golden)}
    for name, mse, cos, _, _ in own:
        if name in against_gt:
            assert against_gt[name] == pytest.approx((mse, cos), abs=2e-6)


@pytest.mark.parametrize("benchmark", ["float", "golden"])
def test_planted_fault_is_the_first_layer_that_falls(flow, capsys, benchmark):
    right = flow / ("sim/float/sigma_outtensor_dump.bin" if benchmark == "float" else "gt/onnx_NHWC_outtensor_dump.bin")
    faulty = rows(capsys, "-l", str(flow / "faulty" / "fixed" / "sigma_outtensor_dump.bin"), "-r", str(right))
    names = [r[0] for r in faulty]
    first_low = next(name for name, _, cos, _, _ in faulty if cos < 0.99)
    first_flag = next(name for name, *_, flag in faulty if flag)
    assert first_low == FAULT and first_flag == FAULT
    k = names.index(FAULT)
    assert faulty[k][3] - faulty[k - 1][3] > 1.0  # the "RMSE" (relative L1) jump the SDK flags
    assert all(cos > 0.99 for _, _, cos, _, _ in faulty[:k])  # before it: the quantisation's error only
