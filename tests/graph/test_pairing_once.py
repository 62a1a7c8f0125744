"""Pairing and the graph walks doing each thing once (issue #35): an op output resolved once for its own row and
its consumers' inputs, fused groups found in one pass, quant/dequant pair members found once per graph, device ops
sorted by their order keys without a key function per op. Each shortcut is held against the rule it stands for."""

from __future__ import annotations

import math

from dumpcmp.graph import pairing
from dumpcmp.graph.graph_json import parse_graph
from dumpcmp.graph.pairing import DeviceOp, Relation, pair_with_ground_truth, quant_pair_members, relation_of
from helpers import graphjson as gj


def test_the_name_mark_is_in_every_alternative_of_both_quant_patterns():
    for pattern in (pairing._QUANT_NAME, pairing._DEQUANT_NAME):
        for alternative in pattern.pattern.split("|"):
            assert pairing.QUANT_NAME_MARK in alternative.replace("\\", ""), alternative


def test_quant_pair_members_are_found_once_and_each_caller_gets_its_own_set():
    int8, fp16 = gj.desc(dtype="DT_INT8"), gj.desc(dtype="DT_FLOAT16")
    graph = parse_graph(gj.document(
        gj.op("in", "Data", 0),
        gj.op("conv_quant_layer", "AscendQuant", 1, inputs=["in:0"], outputs=[int8]),
        gj.op("conv", "Conv2D", 2, inputs=["conv_quant_layer:0"], outputs=[int8]),
        gj.op("conv_dequant_layer", "AscendDequant", 3, inputs=["conv:0"], outputs=[fp16]),
        gj.op("relu", "Relu", 4, inputs=["conv_dequant_layer:0"]),
    ))
    first = quant_pair_members(graph)
    assert first == {"conv"}
    first.add("relu")
    assert quant_pair_members(graph) == {"conv"}
    plain = parse_graph(gj.document(gj.op("a", "Data", 0), gj.op("b_dequant_layer", "Relu", 1, inputs=["a:0"])))
    assert quant_pair_members(plain) == set()


def test_an_output_read_by_several_ops_pairs_the_same_for_each():
    out = gj.desc(origin_name="orig/a", origin_index=0, origin_shape=None)
    graph = parse_graph(gj.document(
        gj.op("a", "Conv2D", 0, outputs=[out]),
        gj.op("b", "Relu", 1, inputs=["a:0"], input_descs=[gj.desc(origin_shape=(2, 3))]),
        gj.op("c", "Relu", 2, inputs=["a:0"], input_descs=[gj.desc(origin_shape=(4, 5))]),
    ))
    device = [DeviceOp(n, t, i, 1, order=k) for k, (n, t, i) in enumerate([("a", "Conv2D", 0), ("b", "Relu", 1),
                                                                          ("c", "Relu", 1)])]
    pairs = pair_with_ground_truth(device, {"orig_a.0": "A"}, graph)
    rows = {(p.npu_op, p.kind): p for p in pairs}
    assert rows[("a", "output")].ground_truth_ref == "A" and rows[("a", "output")].origin_shape is None
    # the same tensor, each consumer's own input desc giving the shape the output's desc has not
    assert rows[("b", "input")].ground_truth_ref == "A" and rows[("b", "input")].origin_shape == (2, 3)
    assert rows[("c", "input")].ground_truth_ref == "A" and rows[("c", "input")].origin_shape == (4, 5)
    assert rows[("b", "input")].ground_truth_key == rows[("c", "input")].ground_truth_key == "orig_a.0"


def test_fused_groups_and_their_last_op_among_duplicates_and_l1_subgraphs():
    graph = parse_graph(gj.document(
        gj.op("f1", "Conv2D", 0, originals=["x", "y"]),
        gj.op("f2", "Relu", 1, inputs=["f1:0"], originals=["y"]),
        gj.op("w", "Const", 2, originals=["y"]),
        gj.op("solo", "Add", 3, inputs=["f2:0"]),
        gj.op("solo", "Add", 4, inputs=["f2:0"]),  # a second op of one name
        gj.op("l1a", "Conv2D", 5, l1="7"),
        gj.op("l1b", "Conv2D", 6, inputs=["l1a:0"], l1="7"),
    ))
    assert relation_of(graph, graph["f1"]) == Relation.MULTI_TO_MULTI
    assert relation_of(graph, graph["f2"]) == Relation.MULTI_TO_ONE
    assert relation_of(graph, graph["solo"]) == Relation.ONE_TO_ONE
    device = [DeviceOp(n, "T", 0, 1, order=k) for k, n in enumerate(["f1", "f2", "solo", "l1a", "l1b"])]
    rows = {p.npu_op: p for p in pair_with_ground_truth(device, {"y.0": "Y", "x.0": "X", "solo.0": "S"}, graph)}
    assert rows["f1"].ground_truth_ref is None and "f2 holds the original output" in rows["f1"].note
    assert rows["f2"].ground_truth_ref == "Y"  # the Const sharing the name is never the one that ran last
    assert rows["solo"].ground_truth_ref == "S"
    assert rows["l1a"].note.endswith("l1b holds the original output") and rows["l1b"].ground_truth_key == "l1b.0"


def test_device_ops_sort_by_their_order_keys_whatever_their_types():
    def order_of(orders):
        device = [DeviceOp(f"op{k}", "T", 0, 1, order=o) for k, o in enumerate(orders)]
        return [p.npu_op for p in pair_with_ground_truth(device, {})]

    def by_rule(orders):  # numbers by value; tuples part by part (numbers, text, None); the others by text; None last
        def part(p):
            return (2, "") if p is None else (0, p) if isinstance(p, (int, float)) else (1, str(p))

        def key(k):
            o = orders[k]
            if isinstance(o, tuple):
                return (1, tuple(map(part, o)))
            return (3, "") if o is None else (0, o) if isinstance(o, (int, float)) else (2, str(o))
        return [f"op{k}" for k in sorted(range(len(orders)), key=key)]

    for orders in ([3, 1.5, 2, 0], [(2, "b"), (10, "a"), (1, "z")], ["10", "9", "1"], [3, None, 1, "x", (0,), True],
                   [2.0, math.nan, 1, 0.5], [(1, 2), None, (0, 5)], [True, 0, 2],
                   [(1, None), (1, 2), (1, "a"), (0, None)]):
        assert order_of(orders) == by_rule(orders), orders
