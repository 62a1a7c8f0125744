"""Quant/dequant pairs (issue #34): a pair that never closes is not a pair, and no dumped op vanishes silently.

A PyTorch export's int8 weight `conv.weight_quantized` matches the original tool's quant-name pattern; the Conv that
reads it opened a "pair" no dequant ever closed, and every op downstream was left out of the result: a PASS with
most of the network missing."""

from __future__ import annotations

import numpy as np

from dumpcmp import TensorData, write_dump
from dumpcmp.cli import main
from dumpcmp.comparison.compare import compare
from dumpcmp.graph.graph_json import load_graph
from dumpcmp.graph.pairing import quant_pair_members

from helpers import graphjson as G

TS = 1700000000000000


def _d(dtype: str = "DT_FLOAT") -> dict:
    return G.desc(dtype=dtype, layout="ND", shape=(8,), origin_shape=(8,), ge_origin_format=None)


def _open_pair_graph(path):
    """x -> Conv_0 (reads the int8 weight 0.stft.conv_real.weight_quantized) -> Relu_1 -> Add_2: no dequant."""
    return G.write(path, G.document(
        G.op("x", "Data", 0, outputs=[_d()]),
        G.op("0.stft.conv_real.weight_quantized", "Const", 1, outputs=[_d("DT_INT8")]),
        G.op("Conv_0", "Conv2D", 2, ["x:0", "0.stft.conv_real.weight_quantized:0"], originals=["Conv_0"],
             outputs=[_d()]),
        G.op("Relu_1", "Relu", 3, ["Conv_0:0"], originals=["Relu_1"], outputs=[_d()]),
        G.op("Add_2", "Add", 4, ["Relu_1:0", "x:0"], originals=["Add_2"], outputs=[_d()]),
    ))


def _closed_pair_graph(path):
    """x -> conv2_quant_layer (int8) -> conv2 -> conv2_dequant_layer (fp16) -> relu: conv2 is inside a real pair."""
    return G.write(path, G.document(
        G.op("x", "Data", 0, outputs=[_d()]),
        G.op("conv2_quant_layer", "AscendQuant", 1, ["x:0"], originals=["conv2_quant_layer"],
             outputs=[_d("DT_INT8")]),
        G.op("conv2", "Conv2D", 2, ["conv2_quant_layer:0"], originals=["conv2"], outputs=[_d("DT_INT32")]),
        G.op("conv2_dequant_layer", "AscendDequant", 3, ["conv2:0"], originals=["conv2_dequant_layer"],
             outputs=[_d("DT_FLOAT16")]),
        G.op("relu", "Relu", 4, ["conv2_dequant_layer:0"], originals=["relu"], outputs=[_d()]),
    ))


def _dumps(root, ops, bad=()):
    dev, gt = root / "dump", root / "gt"
    dev.mkdir()
    gt.mkdir()
    rng = np.random.default_rng(0)
    for k, (name, op_type) in enumerate(ops):
        x = rng.standard_normal(8).astype(np.float32)
        y = np.full(8, np.inf, np.float32) if name in bad else x
        write_dump(dev / f"{op_type}.{name}.{k + 1}.{TS + k}", op_name=name, outputs=[TensorData(y, format="ND")])
        np.save(gt / f"{name}.0.{TS + k}.npy", x)
    return dev, gt


def test_a_pair_that_never_closes_leaves_nothing_out(tmp_path):
    graph = load_graph(_open_pair_graph(tmp_path / "g.json"))
    assert quant_pair_members(graph) == set()


def test_a_closed_pair_keeps_the_original_rule(tmp_path):
    graph = load_graph(_closed_pair_graph(tmp_path / "g.json"))
    assert quant_pair_members(graph) == {"conv2"}


def test_ops_downstream_of_a_quant_named_weight_get_rows(tmp_path, capsys):
    graph = _open_pair_graph(tmp_path / "g.json")
    dev, gt = _dumps(tmp_path, [("Conv_0", "Conv2D"), ("Relu_1", "Relu"), ("Add_2", "Add")], bad={"Relu_1"})
    result = compare(dev, gt, fusion_json=graph)
    compared = {r.tensor_index for r in result.rows if r.status == "compared"}
    assert {"Conv_0:output:0", "Relu_1:output:0", "Add_2:output:0"} <= compared
    assert result.first_below(0.99).tensor_index == "Relu_1:output:0"
    out = tmp_path / "r.csv"
    assert main(["compare", "-l", str(dev), "-r", str(gt), "-f", str(graph), "--quiet", "-o", str(out),
                 "--fail-below", "0.99"]) != 0


def test_dumped_ops_inside_a_closed_pair_are_counted_and_named(tmp_path):
    graph = _closed_pair_graph(tmp_path / "g.json")
    dev, gt = _dumps(tmp_path, [("conv2", "Conv2D"), ("relu", "Relu")])
    result = compare(dev, gt, fusion_json=graph)
    assert "conv2" not in {r.npu_dump for r in result.rows}  # the original's rows, unchanged
    assert result.left_out == ("conv2",)
    text = result.summary()
    assert "2 dumped ops" in text and "conv2" in text and "quant/dequant pair" in text


def test_int8_simulation_of_a_pytorch_export_compares_every_layer(tmp_path):
    """End to end: initializers named as PyTorch names them (`0.stft.conv_real.weight`), golden, simulate int8 (its
    int8 weights become `0.stft.conv_real.weight_quantized`), compare -f: every computing layer has a row."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from dumpcmp.device.simulate import simulate
    from dumpcmp.onnx.golden import dump_golden

    rng = np.random.default_rng(0)

    def w(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "0.stft.conv_real.weight"], ["c0"], name="Conv_0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"], name="Relu_1"),
             helper.make_node("Conv", ["r0", "1.conv.weight"], ["c1"], name="Conv_2", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c1", "r0"], ["a"], name="Add_3"),
             helper.make_node("Relu", ["a"], ["y"], name="Relu_4")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                              initializer=[w("0.stft.conv_real.weight", (4, 1, 3, 3)),
                                           w("1.conv.weight", (4, 4, 3, 3))])
    model = tmp_path / "net.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    x = rng.standard_normal((1, 1, 8, 8)).astype(np.float32)
    dump_golden(model, {"x": x}, tmp_path / "gt")
    sim = simulate(model, tmp_path / "dump", samples=[{"x": x}], precision="int8")
    result = compare(tmp_path / "dump", tmp_path / "gt", fusion_json=sim.json_path)
    compared = {r.pair.npu_op for r in result.rows if r.status == "compared" and r.pair is not None}
    assert {"Conv_2", "Add_3", "Relu_4"} <= compared
    assert any(op.startswith("Conv_0") for op in compared)
    assert result.left_out == ()
