"""The operator pairing rules: the real compiler graph, one synthetic graph per relation, no graph, NPU vs NPU."""

from __future__ import annotations

import pytest

from helpers import graphjson as gj
from dumpcmp.graph.graph_json import load_graph
from dumpcmp.graph.pairing import (
    DeviceOp,
    Relation,
    fused_output_original,
    pair_device_to_device,
    pair_with_ground_truth,
    quant_skip_reason,
    relation_of,
    sanitize_name,
)

FIXTURE = gj.fixture_path()
needs_fixture = pytest.mark.skipif(FIXTURE is None, reason="shared fixture atc_model_ascend310.json not found")


def graph_of(tmp_path, *ops, name="g.json"):
    return load_graph(gj.write(tmp_path / name, gj.document(*ops)))


def device(name, op_type, n_in, n_out, order=0):
    return DeviceOp(name, op_type, n_in, n_out, order, ref=f"dev:{name}@{order}")


def ground_truth(*keys):
    return {k: f"gt:{k}" for k in keys}


def rows_by_index(pairs):
    return {p.tensor_index: p for p in pairs if p.tensor_index is not None}


# --- the real compiler graph --------------------------------------------------------------------------------------
@needs_fixture
def test_real_graph_pairs():
    g = load_graph(FIXTURE)
    executed = [op for op in g if op.type not in ("Data", "Const", "NetOutput")]
    # Device dumps listed in reverse: execution order must come from the graph ids, not the list.
    dev = [device(op.name, op.type, len(op.data_inputs), len(op.output_desc), order=100 - op.id)
           for op in reversed(executed)]
    gt = ground_truth("boxes_all.0", "scores_all.0", "BatchMultiClassNMS_1203.0", "Cast_1206.0", "Concat_1211.0",
                      "Slice_1218.0", "Gather_1221.0", "Reshape_1213.0")
    pairs = pair_with_ground_truth(dev, gt, g)
    rows = rows_by_index(pairs)

    device_rows = [p for p in pairs if p.npu_op is not None]
    assert [p.npu_op for p in device_rows if p.kind == "output" and p.index == 0] == [op.name for op in executed]
    n_tensors = sum(len(op.data_inputs) + len(op.output_desc) for op in executed)
    assert len(device_rows) == n_tensors

    # Explicit origin on an inserted Cast: its output is the original Gather's output.
    cast7 = rows["trans_Cast_7:output:0"]
    assert (cast7.ground_truth_key, cast7.ground_truth_ref, cast7.relation) == ("Gather_1221.0", "gt:Gather_1221.0",
                                                                                  Relation.INSERTED)
    assert cast7.origin_shape == (100,) and cast7.origin_format == "ND" and cast7.comparable
    # No output-desc origin: falls back to the original name; a Const shares it, so MultiToOne.
    gather = rows["PartitionedCall_Gather_1221_gatherv2_3:output:0"]
    assert gather.ground_truth_key == "Gather_1221.0" and gather.relation == Relation.MULTI_TO_ONE
    assert gather.ground_truth_ops == ("Gather_1221",) and gather.graph_op == "PartitionedCall_Gather_1221_gatherv2_3"
    # Inputs through their producers.
    g_in0 = rows["PartitionedCall_Gather_1221_gatherv2_3:input:0"]
    assert g_in0.ground_truth_key == "Concat_1211.0" and g_in0.origin_shape == (100, 5)
    transpose_in = rows["BatchMultiClassNMS_1203_Input0_TransposeBefore:input:0"]
    assert transpose_in.ground_truth_key == "boxes_all.0" and transpose_in.origin_format == "NCHW"
    assert rows["Cast_1206:input:0"].ground_truth_key == "BatchMultiClassNMS_1203.2"
    # BatchMultiClassNMS_1203's inputs come from Transposes the ONNX model does not have: '*'.
    nms_in = rows["BatchMultiClassNMS_1203:input:1"]
    assert nms_in.ground_truth_key == "BatchMultiClassNMS_1203_Input1_TransposeBefore.0"
    assert nms_in.ground_truth_ref is None and nms_in.ground_truth_column == "*" and not nms_in.comparable
    assert "BatchMultiClassNMS_1203:input:2" not in rows  # the "" optional inputs are not dumped
    assert rows["BatchMultiClassNMS_1203:output:3"].ground_truth_ref is None
    assert rows["BatchMultiClassNMS_1203:output:0"].ground_truth_ref == "gt:BatchMultiClassNMS_1203.0"
    # The model output Reshape_1213 has no compiled op: a ground-truth-only row at the end.
    assert pairs[-1].npu_op is None and pairs[-1].ground_truth_key == "Reshape_1213.0"
    assert pairs[-1].npu_column == "*" and pairs[-1].relation == Relation.GROUND_TRUTH_ONLY
    # The model's own Cast_1206 is walked back too, as the original tool walks every Cast/TransData: its
    # output is compared with its producer's, and Cast_1206.0 is left for a ground-truth-only row.
    assert rows["Cast_1206:output:0"].ground_truth_key == "BatchMultiClassNMS_1203.2"
    assert [p.ground_truth_key for p in pairs if p.npu_op is None] == ["Cast_1206.0", "Reshape_1213.0"]


# --- one synthetic graph per relation -----------------------------------------------------------------------------
def test_one_to_one(tmp_path):
    g = graph_of(tmp_path, gj.op("data", "Data", 0), gj.op("conv1", "Conv2D", 1, inputs=["data:0"]))
    pairs = pair_with_ground_truth([device("conv1", "Conv2D", 1, 1)], ground_truth("conv1.0", "data.0"), g)
    rows = rows_by_index(pairs)
    out = rows["conv1:output:0"]
    assert out.relation == Relation.ONE_TO_ONE and out.ground_truth_ref == "gt:conv1.0"
    assert out.npu_ref == "dev:conv1@0" and out.origin_shape == (1, 16, 4, 4) and out.origin_format == "NCHW"
    assert rows["conv1:input:0"].ground_truth_key == "data.0"
    assert [p.tensor_index for p in pairs] == ["conv1:input:0", "conv1:output:0"]


def test_fused_conv_bn_relu_maps_to_the_last_original(tmp_path):
    g = graph_of(
        tmp_path,
        gj.op("data", "Data", 0),
        gj.op("conv1conv1_relu", "Conv2D", 1, inputs=["data:0"],
              originals=["scale_conv1", "conv1", "bn_conv1", "conv1_relu"]),
        # The compiler kept the first op's name: the name says nothing, the last listed original wins.
        gj.op("conv2", "Conv2D", 2, inputs=["conv1conv1_relu:0"], originals=["conv2", "bn2", "relu2"]),
    )
    dev = [device("conv1conv1_relu", "Conv2D", 1, 1, 1), device("conv2", "Conv2D", 1, 1, 2)]
    pairs = pair_with_ground_truth(dev, ground_truth("conv1.0", "conv1_relu.0", "relu2.0", "bn2.0"), g)
    rows = rows_by_index(pairs)
    first = rows["conv1conv1_relu:output:0"]
    assert first.relation == Relation.ONE_TO_MULTI and first.ground_truth_key == "conv1_relu.0"
    assert first.ground_truth_ops == ("scale_conv1", "conv1", "bn_conv1", "conv1_relu")
    assert first.ground_truth_column == "scale_conv1,conv1,bn_conv1,conv1_relu"
    assert rows["conv2:output:0"].ground_truth_key == "relu2.0"
    assert rows["conv2:input:0"].ground_truth_key == "conv1_relu.0"
    # conv1.0 and bn2.0 (intermediate layers of fused chains) pair with nothing.
    assert {p.ground_truth_key for p in pairs if p.npu_op is None} == {"conv1.0", "bn2.0"}


@pytest.mark.parametrize(
    ("compiled", "originals", "expected"),
    [
        ("conv1conv1_relu", ["scale_conv1", "conv1", "bn_conv1", "conv1_relu"], "conv1_relu"),
        ("res2a_branch2cres2ares2a_relu", ["res2a_branch2c", "bn2a_branch2c", "res2a_relu", "res2a"], "res2a_relu"),
        ("conv2", ["conv2", "bn2", "relu2"], "relu2"),
        ("fused", ["a", "b"], "b"),
        ("layer1/conv", ["layer1/conv"], "layer1/conv"),
    ],
)
def test_fused_output_original(compiled, originals, expected):
    assert fused_output_original(compiled, originals) == expected


def test_fused_output_original_of_nothing():
    assert fused_output_original("x", []) is None


def test_multi_to_one_only_the_last_compiled_op_holds_the_output(tmp_path):
    g = graph_of(
        tmp_path,
        gj.op("x", "Data", 0),
        gj.op("lstm_part1", "MatMul", 1, inputs=["x:0"], originals=["lstm"]),
        gj.op("lstm_part2", "DynamicRNN", 2, inputs=["lstm_part1:0"], originals=["lstm"], multiop=True),
    )
    dev = [device("lstm_part1", "MatMul", 1, 1, 1), device("lstm_part2", "DynamicRNN", 1, 1, 2)]
    rows = rows_by_index(pair_with_ground_truth(dev, ground_truth("lstm.0", "x.0"), g))
    part1, part2 = rows["lstm_part1:output:0"], rows["lstm_part2:output:0"]
    assert part1.relation == part2.relation == Relation.MULTI_TO_ONE
    assert part2.ground_truth_key == "lstm.0" and part2.comparable
    assert part1.ground_truth_key is None and part1.ground_truth_ref is None and "lstm_part2" in part1.note
    assert rows["lstm_part2:input:0"].ground_truth_ref is None


def test_multi_to_multi(tmp_path):
    g = graph_of(
        tmp_path,
        gj.op("a", "Conv2D", 1, originals=["x", "y"]),
        gj.op("b", "Relu", 2, inputs=["a:0"], originals=["y", "z"]),
        gj.op("c", "Relu", 3, inputs=["b:0"], originals=["p", "q"]),
    )
    assert relation_of(g, g["a"]) == relation_of(g, g["b"]) == Relation.MULTI_TO_MULTI
    assert relation_of(g, g["c"]) == Relation.ONE_TO_MULTI
    rows = rows_by_index(pair_with_ground_truth([device("a", "Conv2D", 0, 1), device("b", "Relu", 0, 1, 1)],
                                                ground_truth("z.0"), g))
    assert rows["b:output:0"].ground_truth_ref == "gt:z.0"
    assert rows["a:output:0"].ground_truth_ref is None


def test_inputs_walk_back_past_inserted_cast_and_transdata(tmp_path):
    g = graph_of(
        tmp_path,
        gj.op("data", "Data", 0),
        gj.op("conv1", "Conv2D", 1, inputs=["data:0"],
              outputs=[gj.desc(shape=(1, 2, 8, 8, 16), origin_shape=(1, 32, 8, 8))]),
        gj.op("trans_TransData_1", "TransData", 2, inputs=["conv1:0"], originals=[],
              outputs=[gj.desc(layout="NCHW", shape=(1, 32, 8, 8), origin_shape=None)]),
        # Inserted without the attribute at all: recognised by the trans_ name.
        gj.op("trans_Cast_2", "Cast", 3, inputs=["trans_TransData_1:0"],
              outputs=[gj.desc(dtype="DT_FLOAT", origin_shape=None)]),
        gj.op("pool1", "Pooling", 4, inputs=["trans_Cast_2:0"]),
        # An original model's own Cast is walked past as well (the original tool goes by the type).
        gj.op("Cast_9", "Cast", 5, inputs=["pool1:0"]),
        gj.op("relu9", "Relu", 6, inputs=["Cast_9:0"]),
    )
    dev = [device("trans_TransData_1", "TransData", 1, 1, 2), device("trans_Cast_2", "Cast", 1, 1, 3),
           device("pool1", "Pooling", 1, 1, 4), device("relu9", "Relu", 1, 1, 6)]
    pairs = pair_with_ground_truth(dev, ground_truth("conv1.0", "pool1.0", "Cast_9.0", "relu9.0"), g)
    rows = rows_by_index(pairs)
    pool_in = rows["pool1:input:0"]
    assert pool_in.ground_truth_key == "conv1.0" and pool_in.origin_shape == (1, 32, 8, 8)
    assert pool_in.ground_truth_ops == ("conv1",)
    transdata_out = rows["trans_TransData_1:output:0"]
    assert transdata_out.relation == Relation.INSERTED and transdata_out.ground_truth_key == "conv1.0"
    assert rows["trans_Cast_2:output:0"].ground_truth_key == "conv1.0"
    assert relation_of(g, g["trans_Cast_2"]) == Relation.ONE_TO_ONE  # no attribute: its own original by the rules
    assert rows["relu9:input:0"].ground_truth_key == "pool1.0"
    assert [p.npu_op for p in pairs if p.npu_op] == ["trans_TransData_1"] * 2 + ["trans_Cast_2"] * 2 + \
        ["pool1"] * 2 + ["relu9"] * 2


def test_inserted_op_without_origin_has_no_ground_truth(tmp_path):
    g = graph_of(
        tmp_path,
        gj.op("data", "Data", 0),
        gj.op("BroadcastInserted", "BroadcastTo", 1, inputs=["data:0"], originals=[]),
    )
    rows = rows_by_index(pair_with_ground_truth([device("BroadcastInserted", "BroadcastTo", 1, 1)],
                                                ground_truth("data.0"), g))
    out = rows["BroadcastInserted:output:0"]
    assert out.relation == Relation.INSERTED and out.ground_truth_key is None and out.ground_truth_column == "*"
    assert "inserted by the compiler" in out.note
    assert rows["BroadcastInserted:input:0"].ground_truth_key == "data.0"


def test_l1_fusion_group(tmp_path):
    g = graph_of(
        tmp_path,
        gj.op("data", "Data", 0),
        gj.op("conv_a", "Conv2D", 1, inputs=["data:0"], l1="3"),
        gj.op("conv_b", "Conv2D", 2, inputs=["conv_a:0"], l1="3"),
        gj.op("relu_c", "Relu", 3, inputs=["conv_b:0"]),
    )
    dev = [device(n, t, 1, 1, k) for k, (n, t) in enumerate([("conv_a", "Conv2D"), ("conv_b", "Conv2D"),
                                                             ("relu_c", "Relu")])]
    rows = rows_by_index(pair_with_ground_truth(dev, ground_truth("conv_a.0", "conv_b.0", "relu_c.0"), g))
    assert rows["conv_a:output:0"].relation == rows["conv_b:output:0"].relation == Relation.L1_FUSION
    assert rows["conv_b:output:0"].ground_truth_key == "conv_b.0"
    assert rows["conv_a:output:0"].ground_truth_ref is None
    assert rows["relu_c:output:0"].relation == Relation.ONE_TO_ONE


def test_quantize_and_dequantize_tensors_are_skipped(tmp_path):
    g = graph_of(
        tmp_path,
        gj.op("data", "Data", 0),
        gj.op("conv1_quant_layer", "AscendQuant", 1, inputs=["data:0"],
              outputs=[gj.desc(dtype="DT_INT8", origin_name="conv1_quant_layer", origin_index=0)]),
        gj.op("conv1", "Conv2D", 2, inputs=["conv1_quant_layer:0"],
              input_descs=[gj.desc(dtype="DT_INT8")], outputs=[gj.desc(dtype="DT_INT32")]),
        gj.op("conv1_dequant", "AscendDequant", 3, inputs=["conv1:0"], originals=["conv1"],
              outputs=[gj.desc(dtype="DT_FLOAT16")]),
    )
    dev = [device("conv1_quant_layer", "AscendQuant", 1, 1, 1), device("conv1", "Conv2D", 1, 1, 2),
           device("conv1_dequant", "AscendDequant", 1, 1, 3)]
    rows = rows_by_index(pair_with_ground_truth(dev, ground_truth("data.0", "conv1_quant_layer.0", "conv1.0"), g))
    assert rows["conv1_quant_layer:input:0"].skip_reason is None and rows["conv1_quant_layer:input:0"].comparable
    assert "quant" in rows["conv1_quant_layer:output:0"].skip_reason
    assert "quantize op" in rows["conv1:input:0"].skip_reason  # read from the quantize op
    assert not rows["conv1:input:0"].comparable
    assert "dequantize" in rows["conv1_dequant:input:0"].skip_reason
    deq_out = rows["conv1_dequant:output:0"]
    assert deq_out.skip_reason is None and deq_out.ground_truth_key == "conv1.0" and deq_out.comparable


@pytest.mark.parametrize(
    ("name", "op_type", "kind", "dtype", "skipped"),
    [
        ("q", "AscendQuant", "output", None, True),
        ("q", "AscendQuant", "input", None, False),
        ("res2a_quant_layer", "Quant", "output", None, True),
        ("res2a_dequant_layer", "Dequant", "output", None, False),
        ("d", "AscendDequant", "input", None, True),
        ("d", "AscendDequant", "output", "DT_FLOAT16", False),
        ("cast", "Cast", "output", "DT_INT8", False),  # by name, not dtype: an int8 Cast is compared
        ("relu", "Relu", "output", "DT_FLOAT", False),
    ],
)
def test_quant_skip_reason(name, op_type, kind, dtype, skipped):  # dtype: the tensor's, which the rule never asks
    assert (quant_skip_reason(name, op_type, kind) is not None) == skipped


def test_missing_ground_truth_and_ground_truth_without_device_op(tmp_path):
    g = graph_of(
        tmp_path,
        gj.op("data", "Data", 0),
        gj.op("conv1", "Conv2D", 1, inputs=["data:0"]),
        gj.op("relu1", "Relu", 2, inputs=["conv1:0"]),
        gj.op("pool1", "Pooling", 3, inputs=["relu1:0"]),
    )
    # relu1 was not dumped; pool1 has no ground truth.
    dev = [device("conv1", "Conv2D", 0, 1, 1), device("pool1", "Pooling", 0, 1, 3)]
    pairs = pair_with_ground_truth(dev, ground_truth("conv1.0", "relu1.0", "unknown_op.0"), g)
    assert [(p.npu_column, p.ground_truth_column) for p in pairs] == [
        ("conv1", "conv1"),
        ("*", "relu1"),  # placed after conv1, where relu1 runs
        ("pool1", "*"),
        ("*", "unknown_op"),  # not in the graph: at the end
    ]
    pool = pairs[2]
    assert pool.ground_truth_key == "pool1.0" and pool.note == "no ground-truth file for pool1.0"
    assert pairs[1].ground_truth_ref == "gt:relu1.0" and pairs[1].tensor_index is None
    assert pairs[1].index == 0 and pairs[1].npu_ref is None


def test_control_edges_and_absent_inputs_in_pairing(tmp_path):
    g = graph_of(
        tmp_path,
        gj.op("a", "Data", 0),
        gj.op("b", "Data", 1),
        gj.op("ctrl", "NoOp", 2),
        gj.op("add", "Add", 3, inputs=["a:0", "ctrl:-1", "", "b:0"]),
    )
    rows = rows_by_index(pair_with_ground_truth([device("add", "Add", 3, 1)], ground_truth("a.0", "b.0"), g))
    assert rows["add:input:0"].ground_truth_key == "a.0"
    assert rows["add:input:1"].ground_truth_key == "b.0"
    # The dump claims a third input the graph does not have: said, not guessed.
    assert rows["add:input:2"].ground_truth_key is None and "2 data inputs" in rows["add:input:2"].note


def test_device_op_missing_from_the_graph_pairs_by_name(tmp_path):
    g = graph_of(tmp_path, gj.op("conv1", "Conv2D", 1), gj.op("relu1", "Relu", 2, inputs=["conv1:0"]))
    dev = [device("conv1", "Conv2D", 0, 1, 10), device("extra", "Add", 1, 1, 11), device("relu1", "Relu", 0, 1, 12)]
    pairs = pair_with_ground_truth(dev, ground_truth("conv1.0", "extra.0", "relu1.0"), g)
    assert [p.tensor_index for p in pairs] == ["conv1:output:0", "extra:input:0", "extra:output:0", "relu1:output:0"]
    extra = rows_by_index(pairs)["extra:output:0"]
    assert extra.relation == Relation.NO_GRAPH and extra.ground_truth_key == "extra.0" and extra.comparable
    assert "not in the graph" in rows_by_index(pairs)["extra:input:0"].note


def test_names_match_after_runtime_sanitizing(tmp_path):
    g = graph_of(
        tmp_path,
        gj.op("input/x", "Data", 0),
        gj.op("layer1/conv", "Conv2D", 1, inputs=["input/x:0"]),
    )
    # The runtime wrote layer1_conv; the TensorFlow ground truth was saved as layer1_conv.0 and input_x.0.
    rows = rows_by_index(pair_with_ground_truth([device("layer1_conv", "Conv2D", 1, 1)],
                                                ground_truth("layer1_conv.0", "input_x.0"), g))
    out = rows["layer1_conv:output:0"]
    assert out.graph_op == "layer1/conv" and out.ground_truth_key == "layer1_conv.0" and out.comparable
    assert rows["layer1_conv:input:0"].ground_truth_key == "input_x.0"
    assert sanitize_name("a.b/c\\d e") == "a_b_c_d_e"


# --- without a graph ----------------------------------------------------------------------------------------------
def test_pairing_by_name_without_graph():
    dev = [device("relu1", "Relu", 1, 1, order=20), device("conv1", "Conv2D", 1, 2, order=10),
           device("conv1", "Conv2D", 1, 2, order=15)]  # the same op dumped twice: the newer one counts
    pairs = pair_with_ground_truth(dev, ground_truth("conv1.0", "conv1.1", "relu1.0", "zzz.0", "aaa.3"))
    assert [p.tensor_index for p in pairs if p.npu_op] == [
        "conv1:input:0", "conv1:output:0", "conv1:output:1", "relu1:input:0", "relu1:output:0"]
    rows = rows_by_index(pairs)
    assert rows["conv1:output:1"].ground_truth_ref == "gt:conv1.1" and rows["conv1:output:1"].npu_ref == "dev:conv1@15"
    assert all(p.relation == Relation.NO_GRAPH for p in pairs if p.npu_op)
    inp = rows["relu1:input:0"]
    assert inp.ground_truth_key is None and inp.ground_truth_column == "*" and "no graph" in inp.note
    assert [(p.ground_truth_key, p.index) for p in pairs if p.npu_op is None] == [("aaa.3", 3), ("zzz.0", 0)]


def test_quantize_output_skipped_without_graph():
    rows = rows_by_index(pair_with_ground_truth([device("q", "AscendQuant", 1, 1)], ground_truth("q.0")))
    assert rows["q:output:0"].skip_reason is not None and not rows["q:output:0"].comparable


# --- NPU vs NPU ---------------------------------------------------------------------------------------------------
def test_device_to_device_pairs_by_type_and_name():
    left = [device("conv1", "Conv2D", 1, 1, 100), device("relu1", "Relu", 1, 1, 101),
            device("add1", "Add", 2, 1, 102), device("same_name", "Relu", 0, 1, 103)]
    right = [DeviceOp("conv1", "Conv2D", 1, 1, 900, "r:conv1"), DeviceOp("only_right", "Mul", 2, 1, 901, "r:mul"),
             DeviceOp("add1", "Add", 3, 1, 902, "r:add1"), DeviceOp("relu1", "Relu", 1, 1, 903, "r:relu1"),
             DeviceOp("same_name", "Sigmoid", 0, 1, 904, "r:sig")]
    pairs = pair_device_to_device(left, right)
    rows = rows_by_index(pairs)
    conv = rows["conv1:output:0"]
    assert conv.ground_truth_ref == "r:conv1" and conv.npu_ref == "dev:conv1@100"
    assert conv.relation == Relation.SAME_MODEL and conv.ground_truth_key == "Conv2D.conv1" and conv.comparable
    # add1 has 2 inputs on the left, 3 on the right: the third is one-sided.
    assert rows["add1:input:1"].comparable and "count differs" in rows["add1:input:1"].note
    third = [p for p in pairs if p.ground_truth_op == "add1" and p.kind == "input" and p.index == 2]
    assert len(third) == 1 and third[0].npu_op is None and third[0].ground_truth_ref == "r:add1"
    # Same name but another type is another op: no pair on either side.
    assert rows["same_name:output:0"].ground_truth_ref is None
    sig = [p for p in pairs if p.ground_truth_ref == "r:sig"]
    assert len(sig) == 1 and sig[0].npu_op is None
    # Right-only ops follow the op that ran before them on the right (conv1), in left order otherwise.
    order = [(p.npu_column, p.ground_truth_op, p.kind, p.index) for p in pairs]
    assert order[:4] == [("conv1", "conv1", "input", 0), ("conv1", "conv1", "output", 0),
                         ("*", "only_right", "input", 0), ("*", "only_right", "input", 1)]
    assert [p.npu_op for p in pairs if p.npu_op] == ["conv1", "conv1", "relu1", "relu1", "add1", "add1", "add1",
                                                     "same_name"]


def test_device_to_device_ignores_task_stream_timestamp_and_keeps_newest():
    left = [device("conv1", "Conv2D", 0, 1, 5), device("conv1", "Conv2D", 0, 1, 9)]
    right = [DeviceOp("conv1", "Conv2D", 0, 1, 1, "old"), DeviceOp("conv1", "Conv2D", 0, 1, 2, "new")]
    pairs = pair_device_to_device(left, right)
    assert len(pairs) == 1
    assert (pairs[0].npu_ref, pairs[0].ground_truth_ref) == ("dev:conv1@9", "new")
