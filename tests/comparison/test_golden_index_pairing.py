"""Two names, one file (issue #34): ONNX nodes `a/b` and `a_b` sanitise to one file name; golden writes the second as
`a_b_1` and says so in golden_index.csv. Pairing must go through that index, never by the sanitised name."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from dumpcmp import TensorData, write_dump
from dumpcmp.comparison.compare import compare
from dumpcmp.dumps.ground_truth import read_golden_index
from dumpcmp.onnx.golden import dump_golden

from helpers import graphjson as G

TS = 1700000000000000


def _model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="a/b"),
             helper.make_node("Neg", ["r"], ["y"], name="a_b")]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, path)
    return path


def _d():
    return G.desc(dtype="DT_FLOAT", layout="ND", shape=(8,), origin_shape=(8,), ge_origin_format=None)


def case(tmp_path):
    """gt/ written by golden for the model of nodes `a/b` and `a_b`, the device dump of its two ops, the graph JSON."""
    x = np.linspace(-1, 1, 8, dtype=np.float32) + 0.3
    gt = tmp_path / "gt"
    dump_golden(_model(tmp_path / "m.onnx"), {"x": x}, gt)
    graph = G.write(tmp_path / "g.json", G.document(
        G.op("x", "Data", 0, outputs=[_d()]),
        G.op("a_b_relu", "Relu", 1, ["x:0"], originals=["a/b"], outputs=[_d()]),
        G.op("a_b_neg", "Neg", 2, ["a_b_relu:0"], originals=["a_b"], outputs=[_d()]),
    ))
    dev = tmp_path / "dump"
    dev.mkdir()
    r = np.maximum(x, 0)
    write_dump(dev / f"Relu.a_b_relu.1.{TS}", op_name="a_b_relu", inputs=[TensorData(x, format="ND")],
               outputs=[TensorData(r, format="ND")])
    write_dump(dev / f"Neg.a_b_neg.2.{TS + 1}", op_name="a_b_neg", inputs=[TensorData(r, format="ND")],
               outputs=[TensorData(-r, format="ND")])
    return dev, gt, graph


def test_compare_pairs_through_golden_index_not_the_sanitised_name(tmp_path):
    dev, gt, graph = case(tmp_path)
    files = {r.op_name: r.file for r in read_golden_index(gt) if r.file}
    assert files["a_b"].startswith("a_b_1.")  # golden renamed the second name
    result = compare(dev, gt, fusion_json=graph)
    rows = {row.tensor_index: row for row in result.rows}
    for t in ("a_b_relu:output:0", "a_b_neg:output:0", "a_b_neg:input:0"):
        assert rows[t].status == "compared" and rows[t].cosine > 0.9999, (t, rows[t].ground_truth, rows[t].cosine)
    assert result.first_below(0.99) is None


def test_locate_pairs_through_golden_index(tmp_path):
    import dumpcmp

    dev, gt, graph = case(tmp_path)
    result = dumpcmp.locate(tmp_path / "m.onnx", dev, gt, fusion_json=graph)
    rows = {row.op: row for row in result.rows}
    for op in ("a_b_relu", "a_b_neg"):
        assert rows[op].total is not None and rows[op].total.cosine > 0.9999, (op, rows[op].verdict, rows[op].total)


def test_a_sanitised_name_two_keys_share_pairs_neither():
    from dumpcmp.graph.pairing import DeviceOp, pair_with_ground_truth

    keys = {"a/b.0": "file of a/b", "a_b.0": "file of a_b"}
    exact = pair_with_ground_truth([DeviceOp("a_b", "Neg", 0, 1)], keys)
    assert [p.ground_truth_ref for p in exact if p.npu_op] == ["file of a_b"]
    guessed = pair_with_ground_truth([DeviceOp("a.b", "Relu", 0, 1)], keys)
    assert [p.ground_truth_ref for p in guessed if p.npu_op] == [None]


def test_histogram_of_a_ground_truth_folder_names_layers_as_the_index_does(tmp_path):
    """histogram's layers of a ground-truth folder carry the op names golden's index gives, not the file names."""
    from dumpcmp.output.histogram.layers import dump_layers

    gt = tmp_path / "gt"
    dump_golden(_model(tmp_path / "m.onnx"), {"x": np.linspace(-1, 1, 8, dtype=np.float32)}, gt)
    names = {layer.name for layer in dump_layers(gt)}
    assert {"a/b.0", "a_b.0"} <= names and "a_b_1.0" not in names, names
