"""L1 fusion groups are per graph and number: graph `g:1` with number 2 and graph `g` with number `1:2` are two
groups (a key joining them with ":" made them one, and one op lost its ground truth)."""

from __future__ import annotations

from helpers import graphjson as gj
from dumpcmp.graph.graph_json import load_graph
from dumpcmp.graph.pairing import DeviceOp, pair_with_ground_truth


def test_groups_whose_joined_names_are_equal_stay_apart(tmp_path):
    doc = {"name": "model", "version": 2, "graph": [
        {"name": "g:1", "op": [gj.op("a", "Conv2D", 1, l1="2")]},
        {"name": "g", "op": [gj.op("b", "Conv2D", 2, l1="1:2")]},
    ]}
    graph = load_graph(gj.write(tmp_path / "g.json", doc))
    device = [DeviceOp("a", "Conv2D", 0, 1, order=1), DeviceOp("b", "Conv2D", 0, 1, order=2)]
    rows = {p.npu_op: p for p in pair_with_ground_truth(device, {"a.0": "A", "b.0": "B"}, graph)}
    assert (rows["a"].ground_truth_ref, rows["a"].note) == ("A", None)
    assert (rows["b"].ground_truth_ref, rows["b"].note) == ("B", None)


def test_one_group_per_graph_and_number_still_ends_at_its_last_op(tmp_path):
    doc = {"name": "model", "version": 2, "graph": [
        {"name": "g", "op": [gj.op("a", "Conv2D", 1, l1="2"), gj.op("b", "Relu", 2, inputs=["a:0"], l1="2")]},
        {"name": "h", "op": [gj.op("c", "Conv2D", 3, l1="2")]},
    ]}
    graph = load_graph(gj.write(tmp_path / "g.json", doc))
    device = [DeviceOp(n, "T", 0, 1, order=k) for k, n in enumerate("abc")]
    rows = {p.npu_op: p for p in pair_with_ground_truth(device, {"a.0": "A", "b.0": "B", "c.0": "C"}, graph)}
    assert rows["a"].ground_truth_ref is None and rows["a"].note.endswith("b holds the original output")
    assert rows["b"].ground_truth_ref == "B" and rows["c"].ground_truth_ref == "C"
