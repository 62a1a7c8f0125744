"""The graph JSON's fast paths (issue #35) read what the general ones read: ops and descs made without their
`__init__` hold every field, the short paths of attribute values give the general path's values and errors, and
`load_graph` drops the parsed JSON op by op while `parse_graph` leaves a caller's document as it was."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from dumpcmp.errors import ConfigError
from dumpcmp.graph.graph_json import InputRef, Op, TensorDesc, attr_value, load_graph, parse_graph
from helpers import graphjson as gj


def _doc():
    return gj.schema_sample()


def test_every_field_is_set_as_the_dataclasses_would():
    graph = parse_graph(_doc())
    for op in graph.ops:
        rebuilt = dataclasses.replace(op)  # through Op.__init__: every field read, the defaults of none
        assert rebuilt == op and repr(rebuilt) == repr(op)
        assert all(hasattr(op, f.name) for f in dataclasses.fields(Op))  # a slot never set has no value
        for desc in op.input_desc + op.output_desc:
            assert all(hasattr(desc, f.name) for f in dataclasses.fields(TensorDesc))
            assert dataclasses.replace(desc) == desc
        for ref in op.data_inputs:
            assert isinstance(ref, InputRef) and dataclasses.replace(ref) == ref
    b = graph["b"]
    assert [(r.slot, r.producer, r.index) for r in b.data_inputs] == [(0, "a", 0)]
    assert b.control_inputs == ("c",) and b.inputs == ("a:0", "", "c:-1")
    assert b.output(0).origin_shape == (1, 16, 4, 4) and b.output(0).origin_name == "a"
    assert b.l1_fusion_no == "3" and b.is_multiop and b.original_op_names == ("x", "y")


@pytest.mark.parametrize("value", [
    {"s": "text"}, {"s": 3}, {"i": 7}, {"i": "7"}, {"i": 7.0}, {"b": True},
    {"list": {"val_type": "VT_LIST_INT", "i": [1, 2, 3]}},
    {"list": {"val_type": "VT_LIST_INT", "i": ["1", 2]}},
    {"list": {"val_type": "VT_LIST_INT", "i": []}},
    {"list": {"val_type": "VT_LIST_INT", "s": ["a"]}},
    {"list": {"i": [1], "s": ["a"]}}, {"list": {"s": ["a"], "i": [1]}}, {"list": {"f": [1.5], "i": [2]}},
    {"list": {"val_type": "VT_LIST_INT", "i": [1], "extra": 3}}, {"list": {"i": [1]}},
])
def test_short_paths_give_the_general_value(value):
    graph = parse_graph({"graph": [{"op": [{"name": "x", "attr": [{"key": "k", "value": value}]}]}]})
    assert graph["x"].attrs["k"] == attr_value(value)
    assert type(graph["x"].attrs["k"]) is type(attr_value(value))


@pytest.mark.parametrize("value", [
    {"i": True}, {"i": "abc"},
    {"list": {"val_type": "VT_LIST_INT", "i": [1, True]}},
    {"list": {"val_type": "VT_LIST_INT", "i": [1, "x"]}},
])
def test_short_paths_refuse_what_the_general_one_refuses(value):
    with pytest.raises(ValueError):
        attr_value(value)
    with pytest.raises(ConfigError, match="attribute 'k'"):
        parse_graph({"graph": [{"op": [{"name": "x", "attr": [{"key": "k", "value": value}]}]}]})


def test_parse_graph_leaves_the_document_and_load_graph_reads_the_same(tmp_path):
    doc = _doc()
    kept = copy.deepcopy(doc)
    graph = parse_graph(doc)
    assert doc == kept
    loaded = load_graph(gj.write(tmp_path / "g.json", doc))
    assert loaded.ops == graph.ops and [repr(o) for o in loaded.ops] == [repr(o) for o in graph.ops]


def test_consume_drops_each_op_once_read():
    doc = _doc()
    graph = parse_graph(doc, consume=True)
    assert doc["graph"][0]["op"] == [None, None, None] and len(graph) == 3
