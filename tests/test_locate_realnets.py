"""dumpcmp locate on a real network (tests/realnets.py, from the branch that fetches PyPI-published ONNX networks
into a cache; this file skips until that helper is present): PP-OCR's text direction classifier (MobileNetV3:
Conv+BN(+ReLU) fused, hard-swish, squeeze-excite, a MatMul head) with a planted fault, simulated as the device."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
realnets = pytest.importorskip("realnets")

import dumpcmp  # noqa: E402
from dumpcmp.graph import load_graph  # noqa: E402


def _plant(model: Path, target: Path, weight: str) -> None:
    from locate_nets import plant_fault

    plant_fault(model, target, weight, noise=0.5)


def _conv_weight(model_path: Path, conv: str) -> str:
    import onnx

    model = onnx.load(model_path, load_external_data=False)
    node = next(n for n in model.graph.node if (n.name or n.output[0]) == conv)
    return node.input[1]


@pytest.mark.parametrize("precision,kind", [("fp16", "fused"), ("fp16", "unfused"), ("int8", "fused")])
def test_a_planted_fault_in_a_real_cnn_is_named_exactly(tmp_path: Path, precision: str, kind: str) -> None:
    from dumpcmp.golden import dump_golden
    from dumpcmp.simulate import simulate

    model = realnets.realnet_or_skip("ocr_cls")
    x = np.random.default_rng(0).standard_normal((1, 3, 48, 96)).astype(np.float32)
    dump_golden(model, {"x": x}, tmp_path / "gt")
    # find the op to break in the healthy compiled graph: a fused Conv+BN in the middle, or the MatMul head
    healthy = simulate(model, tmp_path / "healthy", precision="fp16", samples=[{"x": x}], dump_mode="output")
    graph = load_graph(healthy.json_path)
    if kind == "fused":
        fused = [op for op in graph.ops if op.type == "Conv2D" and len(graph.original_names(op)) > 1]
        op = fused[len(fused) // 2]
        weight = _conv_weight(model, graph.original_names(op)[0])
    else:
        op = next(op for op in graph.ops if op.type == "MatMulV2")
        weight = _conv_weight(model, graph.original_names(op)[0])
    _plant(model, tmp_path / "faulty.onnx", weight)
    sim = simulate(tmp_path / "faulty.onnx", tmp_path / "dump", precision=precision, samples=[{"x": x}],
                   dump_mode="all", model_name="ocr_cls")
    r = dumpcmp.locate(model, tmp_path / "dump", tmp_path / "gt", fusion_json=sim.json_path)
    assert r.origin is not None
    rows = {row.op: row for row in r.rows}
    if r.origin.op != op.name:
        # int8: this network's weights are Constant nodes, quantized at run time by quantize/dequantize ops; the
        # faulty weight then shows first at its dequantize op (compared with the original weight), then the op
        assert precision == "int8" and r.origin.op_type == "AscendDequant" and weight in r.origin.note
        assert rows[op.name].verdict == "adds"
    assert [row.op for row in r.rows if row.verdict in ("origin", "adds")] in ([op.name], [r.origin.op, op.name])
    # every op is replayed; a quantize op (raw integers out) is replayed with its dequantize op
    assert [row.op for row in r.rows if row.verdict == "not replayed" and row.op_type != "AscendQuant"] == []
    position = r.rows.index(r.origin)
    noise = 5e-3 if precision == "fp16" else 0.06
    assert all(row.own.rrmse < noise for row in r.rows[:position] if row.own is not None)
    after = [row for row in r.rows[position + 1:] if row.own is not None and row.op != op.name]
    # int8: quantization noise downstream grows with the faulty values it is fed, but stays within the threshold
    assert all(row.own.rrmse < noise if precision == "fp16" else not r.crosses(row.own) for row in after)
    assert any(row.inherited is not None and row.inherited.cosine < 0.999 for row in after)
