"""Which graph op a device op name finds (`graph_op_of`, the pairing's `find`): the name as the graph spells it,
then as a dump file spells it (sanitised: `.`, `/`, `\\` and spaces as `_`), the first op in execution order of a
sanitised name winning. A name is tried as it is among the sanitised names before it is sanitised: these cases hold
that the shortcut finds what sanitising finds."""

from __future__ import annotations

from helpers import graphjson as gj
from dumpcmp.graph.graph_json import load_graph
from dumpcmp.graph.pairing import DeviceOp, graph_op_of, pair_with_ground_truth


def _graph(tmp_path, *names):
    ops = [gj.op(n, "Conv2D", k, inputs=[f"{names[k - 1]}:0"] if k else []) for k, n in enumerate(names)]
    return load_graph(gj.write(tmp_path / "g.json", gj.document(*ops)))


def _found(graph, name):
    op = graph_op_of(graph, name)
    return None if op is None else op.name


def test_names_as_the_graph_and_as_a_dump_file_spell_them(tmp_path):
    graph = _graph(tmp_path, "model/block.0/conv", "plain", "with space", "back\\slash")
    assert _found(graph, "model/block.0/conv") == "model/block.0/conv"  # as the graph spells it
    assert _found(graph, "model_block_0_conv") == "model/block.0/conv"  # as a dump file spells it
    assert _found(graph, "model/block_0.conv") == "model/block.0/conv"  # spelt neither way: sanitised first
    assert _found(graph, "plain") == "plain"
    assert _found(graph, "with_space") == "with space"
    assert _found(graph, "back_slash") == "back\\slash"
    assert _found(graph, "model_block_0_conv_") is None
    assert _found(graph, "model.block.0.conv.") is None


def test_the_first_op_of_a_sanitised_name_wins(tmp_path):
    graph = _graph(tmp_path, "a/b", "a.b", "a_b")
    assert _found(graph, "a_b") == "a_b"  # the graph's own spelling first
    assert _found(graph, "a.b") == "a.b"
    graph = _graph(tmp_path, "x/y", "x.y")
    assert _found(graph, "x_y") == "x/y"  # no op spelt x_y: the first in execution order of those sanitised so
    assert _found(graph, "x y") == "x/y"


def test_pairing_through_a_sanitised_name(tmp_path):
    graph = _graph(tmp_path, "net/conv1", "net/relu1")
    ops = [DeviceOp("net_conv1", "Conv2D", 0, 1, 0, ref="d0"), DeviceOp("net_relu1", "Conv2D", 1, 1, 1, ref="d1")]
    pairs = pair_with_ground_truth(ops, {"net_conv1.0": "g0", "net_relu1.0": "g1"}, graph)
    assert [(p.tensor_index, p.graph_op, p.ground_truth_key, p.ground_truth_ref) for p in pairs] == [
        ("net_conv1:output:0", "net/conv1", "net_conv1.0", "g0"),
        ("net_relu1:input:0", "net/relu1", "net_conv1.0", "g0"),
        ("net_relu1:output:0", "net/relu1", "net_relu1.0", "g1"),
    ]
