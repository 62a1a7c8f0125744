"""The graph JSON's rule lives once, in the core (#35): a file, a decoded document (`parse_graph`) and one attribute
value (`attr_value`) are read by the same reader, and a value the old Python walk crashed on is an error naming the
file."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dumpcmp.errors import ConfigError
from dumpcmp.graph import graph_json
from dumpcmp.graph.graph_json import attr_value, load_graph, parse_graph
from helpers import graphjson as gj
from helpers import hostile


def _attr_doc(value_text: str) -> str:
    return '{"graph": [{"op": [{"name": "x", "attr": [{"key": "k", "value": ' + value_text + "}]}]}]}"


def test_a_float_attribute_too_large_for_a_float_is_an_error_naming_the_file(tmp_path):
    """Before: float() of a 400-digit integer raised OverflowError through load_graph (a traceback, not exit 2)."""
    path = tmp_path / "m.json"
    path.write_text(_attr_doc('{"f": 1' + "0" * 400 + "}"))
    with pytest.raises(ConfigError) as error:
        load_graph(path)
    assert str(error.value) == f"{path}: graph 'graph_0' op 'x': attribute 'k': int too large to convert to float"


def test_the_cli_says_so_in_one_line_and_exits_2(tmp_path):
    graph = tmp_path / "m.json"
    graph.write_text(_attr_doc('{"list": {"f": [1, 2' + "0" * 400 + "]}}"))
    (tmp_path / "d").mkdir()
    (tmp_path / "g").mkdir()
    (tmp_path / "d" / hostile.DUMP_NAME).write_bytes(hostile.dump_bytes())
    np.save(tmp_path / "g" / hostile.GT_NAME, np.zeros((1, 2, 2, 2), np.float32))
    done = subprocess.run([sys.executable, "-m", "dumpcmp", "compare", "-l", str(tmp_path / "d"), "-r",
                           str(tmp_path / "g"), "-f", str(graph), "-o", str(tmp_path / "out"), "--quiet"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "int too large to convert to float" in done.stderr and str(graph) in done.stderr


def test_the_python_walk_is_gone():
    for name in ("_parse_op", "_parse_desc", "_parse_attrs", "_parse_input", "_to_int", "_ints", "_shape"):
        assert not hasattr(graph_json, name), name


def test_a_document_and_its_file_read_the_same(tmp_path):
    doc = gj.document(gj.op("a", "Data", 0), gj.op("b", "Relu", 1, inputs=["a:0", "", "a:-1"], originals=["x"]))
    doc["graph"][0]["op"][1]["attr"].append({"key": "t", "value": {"t": {"n": [1, 2.5, None]}}})
    from_doc = parse_graph(doc, "given")
    from_file = load_graph(gj.write(tmp_path / "m.json", doc))
    assert from_doc.ops == from_file.ops
    assert [op.attrs for op in from_doc.ops] == [op.attrs for op in from_file.ops]
    assert from_doc.ops[1].attrs["t"] == {"t": {"n": [1, 2.5, None]}}


def test_a_document_that_is_not_json_says_why():
    with pytest.raises(ConfigError, match="^given: not a graph file: "):
        parse_graph({"graph": [{"op": [{"name": "x", "id": object()}]}]}, "given")


def test_attr_value_errors_are_value_errors_with_the_rules_words():
    with pytest.raises(ValueError, match=r"^expected an integer, got True$"):
        attr_value({"i": True})
    with pytest.raises(ValueError, match=r"^invalid literal for int\(\) with base 10: 'twelve'$"):
        attr_value({"i": "twelve"})
    assert attr_value({"list": {"t": [None, 1]}}) == [None, 1]
    assert attr_value({"i": " 7 "}) == 7


def test_the_words_of_the_schema_and_equal_shapes_are_one_object_each(tmp_path):
    """Every op's type, dtype, layout and attribute key is one string whatever the file's size, and equal shapes are
    one tuple (#35, the graph's memory). Before, the reader's cache stopped at 4,096 strings: past them each op had
    strings of its own (22,309 'DT_FLOAT16' objects at 20,000 ops)."""
    ops = []
    for n in range(6000):
        out = gj.desc(origin_name=f"o{n}", origin_index=0, origin_format="NCHW", origin_shape=(1, 16, 4, 4))
        out["shape"] = {"dim": [1, 1, 4, 4, 16]}
        out["attr"].append({"key": "_a_long_attribute_key_of_the_compiler", "value": {"s": f"v{n}"}})
        ops.append(gj.op(f"op{n}", "Conv2DBackpropInputD", n, outputs=[out]))
    graph = load_graph(gj.write(tmp_path / "m.json", gj.document(*ops)))
    descs = [op.output_desc[0] for op in graph.ops]
    assert len(descs) == 6000 and descs[-1].origin_name == "o5999"
    assert len({id(op.type) for op in graph.ops}) == 1
    assert len({id(d.dtype) for d in descs}) == 1 and len({id(d.layout) for d in descs}) == 1
    assert len({id(d.shape) for d in descs}) == 1 and descs[0].shape == (1, 1, 4, 4, 16)
    assert len({id(d.origin_shape) for d in descs}) == 1 and descs[0].origin_shape == (1, 16, 4, 4)
    assert len({id(key) for d in descs for key in d.attrs}) == len(descs[0].attrs)
