"""Pairing's rows made in bulk (issue #35): every field set as TensorPair's `__init__` would, and the rows' order
(ground truth the graph does not know at the end, by name) with the sort keys taken as they are."""

from __future__ import annotations

import dataclasses

from dumpcmp.graph.graph_json import parse_graph
from dumpcmp.graph.pairing import DeviceOp, Relation, TensorPair, pair_with_ground_truth
from helpers import graphjson as gj


def test_rows_hold_every_field_and_keep_their_order():
    out = gj.desc(origin_name="b_orig", origin_index=0)
    graph = parse_graph(gj.document(
        gj.op("a", "Data", 0),
        gj.op("b", "Conv2D", 1, inputs=["a:0"], outputs=[out]),
        gj.op("trans_TransData_2", "TransData", 2, inputs=["b:0"], originals=[]),
        gj.op("c.x", "Relu", 3, inputs=["trans_TransData_2:0"], originals=["c1", "c2"]),
    ))
    device = [DeviceOp("c_x", "Relu", 1, 1, order=3), DeviceOp("b", "Conv2D", 1, 1, order=1),
              DeviceOp("zzz", "Add", 0, 1, order=9), DeviceOp("a", "Data", 0, 1, order=0),
              DeviceOp("trans_TransData_2", "TransData", 1, 1, order=2)]
    truth = {k: k for k in ("a.0", "b_orig.0", "c2.0", "c1.0", "zeta.0", "alpha.1", "alpha.0")}
    pairs = pair_with_ground_truth(device, truth, graph)
    names = {f.name for f in dataclasses.fields(TensorPair)}
    for p in pairs:
        assert set(vars(p)) == names
        assert dataclasses.replace(p) == p and repr(dataclasses.replace(p)) == repr(p)
    assert [(p.npu_op, p.kind, p.index, p.ground_truth_key) for p in pairs] == [
        ("a", "output", 0, "a.0"),
        ("b", "input", 0, "a.0"), ("b", "output", 0, "b_orig.0"),
        ("trans_TransData_2", "input", 0, "b_orig.0"), ("trans_TransData_2", "output", 0, "b_orig.0"),
        ("c_x", "input", 0, "b_orig.0"), ("c_x", "output", 0, "c2.0"),
        ("zzz", "output", 0, "zzz.0"),  # not in the graph: right after the device op before it
        (None, "output", 0, "c1.0"),  # after the last op standing for it
        (None, "output", 0, "alpha.0"), (None, "output", 1, "alpha.1"), (None, "output", 0, "zeta.0"),
    ]
    assert pairs[6].relation == Relation.ONE_TO_MULTI and pairs[6].tensor_index == "c_x:output:0"
    assert pairs[6].graph_op == "c.x"
