"""#34 "Advice": the rules know the device's precision from the dumps, scale with the tensor's range, speak of the op
type they see and appear once per tensor, the verdict's own advice first. Small ONNX models: `golden` on the model,
`simulate --precision fp16|int8` as the device (a fault planted in one weight where a verdict is wanted)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dumpcmp  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402
from dumpcmp.output.advice import advise, device_precision  # noqa: E402
from dumpcmp.output.report import collect  # noqa: E402

from helpers.locate_nets import plant_fault  # noqa: E402

F = TensorProto.FLOAT


def _save(path: Path, nodes, outputs, inits) -> Path:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info(n, F, s) for n, s in outputs],
                              [numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def spiky_convs(path: Path) -> Path:
    """x -> conv1 -> add (a constant with two spikes of 400) -> conv2: a few outliers that spend an int8 scale."""
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((8, 4, 3, 3)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.1
    spike = np.zeros((1, 8, 8, 8), np.float32)
    spike[0, 0, 2, 2], spike[0, 3, 5, 1] = 400.0, -400.0
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c1", "spike"], ["a1"], name="spiky"),
             helper.make_node("Conv", ["a1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1])]
    return _save(path, nodes, [("c2", [1, 8, 8, 8])], [("w1", w1), ("w2", w2), ("spike", spike)])


def matmul_reshape(path: Path, fault: float = 0.0) -> Path:
    """Large inputs (the test feeds x * 3000: fp16 rounding alone gives an RMSE near 1 at the input's Cast), a
    MatMul whose weight takes the fault (relative noise `fault`), a Reshape of its output, and a variance
    (ReduceMean of (x / 50)^2: values in the thousands, an RMSE above 0.5 at cosine > 0.999)."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((8, 8)).astype(np.float32) * 0.3
    w = w + rng.standard_normal(w.shape).astype(np.float32) * np.float32(fault * 0.3)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
             helper.make_node("Reshape", ["mm", "shape"], ["rs"], name="reshape"),
             helper.make_node("Mul", ["x", "k"], ["xd"], name="scale"),
             helper.make_node("Mul", ["xd", "xd"], ["sq"], name="square"),
             helper.make_node("ReduceMean", ["sq"], ["var"], name="variance", axes=[1])]
    return _save(path, nodes, [("rs", [1, 256]), ("var", [1, 1, 8, 8])],
                 [("w", w), ("k", np.array(0.02, np.float32)), ("shape", np.array([1, 256], np.int64))])


def _run(tmp_path: Path, model: Path, precision: str, device: Path | None = None, scale: float = 1.0,
         dump_mode: str = "all"):
    x = np.random.default_rng(3).standard_normal((1, 4, 8, 8)).astype(np.float32) * np.float32(scale)
    dump_golden(model, {"x": x}, tmp_path / "gt")
    sim = simulate(device or model, tmp_path / "dump", precision=precision, samples=[{"x": x}], model_name="net",
                   dump_mode=dump_mode)
    return dumpcmp.compare(tmp_path / "dump", tmp_path / "gt", fusion_json=sim.json_path)


def _histograms(result):
    hists, _, _ = collect(result, layers=None, top_n=0)
    return {i: h[1] for i, h in hists.items()}


def test_no_int8_advice_on_an_fp16_device(tmp_path):
    model = spiky_convs(tmp_path / "m.onnx")
    device = plant_fault(model, tmp_path / "faulty.onnx", "w2", noise=0.5)
    result = _run(tmp_path, model, "fp16", device)
    assert device_precision(result) == "float16"
    advice = advise(result, histograms=_histograms(result))
    assert not [a for a in advice if a.rule in ("int8-outliers", "int16-layer", "wide-conv-input")]
    # the verdict's own advice is the first line, naming the faulty conv
    assert advice and advice[0].rule == "single-layer" and "conv2" in advice[0].layer


@pytest.mark.parametrize("dump_mode", ["all", "output"])
def test_int8_outliers_once_per_tensor(tmp_path, dump_mode):
    result = _run(tmp_path, spiky_convs(tmp_path / "m.onnx"), "int8", dump_mode=dump_mode)
    assert device_precision(result) == "int8"
    advice = [a for a in advise(result, histograms=_histograms(result)) if a.rule == "int8-outliers"]
    tensors = [result.rows[a.key].pair.ground_truth_key for a in advice]
    # the spiky tensor is dumped as the Add's output, the quantize op's input, the dequantize op's output and
    # conv2's input: advised once; and only what a quantize op reads is advised (conv1's output is not quantized)
    rows_a1 = [r for r in result.rows if r.pair is not None and r.pair.ground_truth_key == "spiky.0"]
    assert tensors == ["spiky.0"] and len(rows_a1) >= (4 if dump_mode == "all" else 2)


def test_int16_layer_scaled_and_on_the_op_it_sees(tmp_path):
    model = matmul_reshape(tmp_path / "m.onnx")
    device = matmul_reshape(tmp_path / "faulty.onnx", fault=0.5)
    result = _run(tmp_path, model, "int8", device, scale=3000.0)
    assert device_precision(result) == "int8"
    advice = [a for a in advise(result) if a.rule == "int16-layer"]
    by_type = {result.rows[a.key].op_type for a in advice}
    # the faulty MatMul is named as a MatMul; neither the Reshape that carries its error, nor the input's Cast,
    # nor the variance at cosine > 0.999 (an absolute RMSE above 0.5 on values in the millions) is
    assert by_type <= {"MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2"} and len(advice) == 1
    (a,) = advice
    assert "convolution" not in a.message and f"run this {result.rows[a.key].op_type} in 16 bit" in a.message
    var = next(r for r in result.rows if r.pair is not None and r.pair.kind == "output" and
               r.pair.ground_truth_key == "variance.0")
    assert var.cosine > 0.999 and var.value(7) > 0.5  # what the absolute rule fired on
    span = float(a.evidence["range"])
    assert a.evidence["levels"] == pytest.approx(a.evidence["rmse"] / (span / 255))
