"""#39: SigmaStar's DumpDebug flow end to end on a real network (the PP-OCR direction classifier, MobileNetV3 with
hardswish and squeeze-excite blocks; tests/helpers/realnets.py fetches it), without the SDK: `golden --format
sigmastar` (the original model), `simulate --target sigmastar` (the float and the fixed-point model), then their
compare as the SDK's users run it: the float dump equals the original, the fixed model's own error shows on every
layer (COS below 1, MSE above 0), and a fault planted in one layer of the fixed model is the first layer whose COS
falls and whose "RMSE" jump is flagged, against the float dump and against the original alike.

Then the report and `locate` on the same dumps, with the original ONNX model given: a smaller fault (0.3 times the
tensor's RMS) is the report's first bad layer and locate's only origin, the layers after it inherited; without a
fault no layer's own error crosses the threshold, so locate claims no origin. Every verdict is checked against the
numbers, and the own error of every ReLU layer is recomputed with NumPy from the dumps (max(input, 0) on the fixed
dump's own input, against its dumped output). A larger fault (the 2x above) pushes later layers past the range the
calibration saw, and their clipping at that range is then their own error, which locate rightly reports as `adds`."""

from __future__ import annotations

import csv
import json
import math
import re

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
realnets = pytest.importorskip("helpers.realnets")

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.dumps.sigmastar import open_sigmastar  # noqa: E402

LINE = re.compile(r"(\d+)\.(\S+?)\.xx\.output0\s*OP_TYPE:(\S+?)\s*MSE:([\d.]+)\s+COS:(-?[\d.]+)\s+RMSE:([\d.]+)(.*)")
FAULT = "relu_1.tmp_0"  # a ReLU of the second block, 1x24x48x8 in NHWC
FAULT_NODE = "Relu@1"  # its node
DUMP = "sigma_outtensor_dump.bin"
LIMIT = math.sqrt(2 * (1 - 0.99))  # locate's default relative-RMSE limit for the cosine threshold 0.99


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
    assert main(["simulate", "--target", "sigmastar", *common, "-o", str(root / "small"), "--fault", FAULT,
                 "--fault-scale", "0.3"]) == 0
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


def read_csv(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def onnx_nodes(model):
    import onnx

    return [n for n in onnx.load(str(model)).graph.node if n.op_type != "Constant"]


def nchw(dump, name):
    t = next(t for t in dump.tensors if t.name == name)
    v = dump.values(t).astype(np.float64)
    return v.transpose(0, 3, 1, 2) if v.ndim == 4 else v


def cos_rrmse(x, y):
    x, y = x.reshape(-1), y.reshape(-1)
    cos = float(x @ y / np.sqrt((x @ x) * (y @ y)))
    return cos, float(np.sqrt(np.mean((x - y) ** 2)) / np.sqrt(np.mean(y * y)))


def crosses(row, prefix):
    c, e = float(row[prefix + "Cosine"]), float(row[prefix + "RelRMSE"])
    return c < 0.99 or e > LIMIT


def check_relu_rows(rows, model, dump):
    """Own error of every ReLU layer, by NumPy: the dumped output against max(dumped input, 0)."""
    relus = {n.output[0]: n.input[0] for n in onnx_nodes(model) if n.op_type == "Relu"}
    checked = 0
    for r in rows:
        if r["OpType"] != "Relu" or r["Verdict"] == "not replayed":
            continue
        cos, rrmse = cos_rrmse(nchw(dump, r["Output"]), np.maximum(nchw(dump, relus[r["Output"]]), 0))
        assert float(r["OwnCosine"]) == pytest.approx(cos, abs=2e-6), r["NPUOp"]
        assert float(r["OwnRelRMSE"]) == pytest.approx(rrmse, rel=1e-4, abs=2e-6), r["NPUOp"]
        checked += 1
    assert checked >= 5


def check_verdicts_follow_the_numbers(rows):
    """origin / adds exactly where the own error crosses the threshold (the first: origin); inherited where only
    the total or the inherited error does; ok elsewhere."""
    seen = False
    for r in rows:
        if r["Verdict"] == "not replayed":
            continue
        if crosses(r, "Own"):
            assert r["Verdict"] == ("adds" if seen else "origin"), r["NPUOp"]
            seen = True
        elif (r["TotalCosine"] != "NaN" and crosses(r, "Total")) or \
                (r["InheritedCosine"] != "NaN" and crosses(r, "Inherited")):
            assert r["Verdict"] == "inherited", r["NPUOp"]
        else:
            assert r["Verdict"] == "ok", r["NPUOp"]


def test_the_report_shows_the_fault_as_the_first_bad_layer(flow, capsys):
    root, model = flow, realnets.realnet_or_skip("ocr_cls")
    out = root / "report.html"
    assert main(["report", "-l", str(root / "small" / "fixed" / DUMP), "-r", str(root / "gt"), "-o", str(out),
                 "--locate", str(model), "--quiet"]) == 0
    text = out.read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S).group(1))
    header = re.findall(r'<th data-col="\d+">([^<]*)</th>', text)
    cells = [dict(zip(header, row)) for row in data["cells"]]
    assert data["verdict"]["first_below"]["name"] == FAULT
    starts = data["verdict"]["error_starts"]
    assert (starts["op"], starts["verdict"]) == (FAULT_NODE, "origin") and starts["own_cosine"] < 0.99
    # rows in the ONNX graph's order, each naming the node that produces its tensor
    producer = {o: (k, n.name, n.op_type) for k, n in enumerate(onnx_nodes(model)) for o in n.output}
    assert [producer[c["TensorIndex"]][0] for c in cells] == sorted(producer[c["TensorIndex"]][0] for c in cells)
    assert all((c["NPUDump"], c["OpType"]) == producer[c["TensorIndex"]][1:] for c in cells)
    k = next(i for i, c in enumerate(cells) if c["TensorIndex"] == FAULT)
    assert cells[k]["NPUDump"] == FAULT_NODE and float(cells[k]["CosineSimilarity"]) < 0.99
    assert all(float(c["CosineSimilarity"]) >= 0.99 for c in cells[:k])
    assert "RelativeL1" in header and "MSE" in header
    assert sum(1 for rec in data["rows"] if "hist" in rec) >= 20  # histograms of the worst layers


def test_locate_names_the_fault_origin_and_the_layers_after_it_inherited(flow, capsys):
    root, model = flow, realnets.realnet_or_skip("ocr_cls")
    fixed = root / "small" / "fixed" / DUMP
    assert main(["locate", str(model), "-l", str(fixed), "-r", str(root / "gt"), "-o", str(root / "loc"),
                 "--quiet"]) == 0
    rows = read_csv(root / "loc" / "locate.csv")
    assert len(rows) > 200
    origin = [r for r in rows if r["Verdict"] == "origin"]
    assert [(r["NPUOp"], r["Output"]) for r in origin] == [(FAULT_NODE, FAULT)]
    k = rows.index(origin[0])
    assert {r["Verdict"] for r in rows[k + 1:]} <= {"inherited", "ok"}
    assert sum(1 for r in rows[k + 1:] if r["Verdict"] == "inherited") > 100
    dev, gt = open_sigmastar(fixed), open_sigmastar(root / "gt" / "onnx_NHWC_outtensor_dump.bin")
    # by hand: the ReLU's own error is the fault (its input still agrees with the ground truth)
    own = cos_rrmse(nchw(dev, FAULT), np.maximum(nchw(dev, "batch_norm_2.tmp_2"), 0))
    inherited = cos_rrmse(nchw(dev, "batch_norm_2.tmp_2"), nchw(gt, "batch_norm_2.tmp_2"))
    assert own[0] < 0.99 and inherited[0] > 0.999
    assert float(origin[0]["OwnCosine"]) == pytest.approx(own[0], abs=2e-6)
    assert float(origin[0]["InheritedCosine"]) == pytest.approx(inherited[0], abs=2e-6)
    check_relu_rows(rows, model, dev)
    check_verdicts_follow_the_numbers(rows)


def test_without_a_fault_no_origin_is_claimed(flow, capsys):
    root, model = flow, realnets.realnet_or_skip("ocr_cls")
    fixed = root / "sim" / "fixed" / DUMP
    assert main(["locate", str(model), "-l", str(fixed), "-r", str(root / "gt"), "-o", str(root / "loc0"),
                 "--quiet"]) == 0
    rows = read_csv(root / "loc0" / "locate.csv")
    assert not [r for r in rows if r["Verdict"] in ("origin", "adds")]
    check_verdicts_follow_the_numbers(rows)
    check_relu_rows(rows, model, open_sigmastar(fixed))
    # the quantisation's own error is there, spread over the layers, each small
    replayed = [r for r in rows if r["Verdict"] != "not replayed"]
    assert sum(1 for r in replayed if float(r["OwnRelRMSE"]) > 1e-6) > 0.9 * len(replayed)
    # against the float model's dump, which does not hold the model input: the first layer says why it is left out
    assert main(["locate", str(model), "-l", str(fixed), "-r", str(root / "sim" / "float" / DUMP), "-o",
                 str(root / "loc1"), "--quiet"]) == 0
    first = read_csv(root / "loc1" / "locate.csv")[0]
    assert first["Verdict"] == "not replayed" and "neither in the dump nor in the benchmark" in first["Note"]
