"""The graph JSON reader (issue #35: one rule, in the core: native/bindings/bind_graph.cpp over the JSON layer of
native/src/graph_json.cpp) against a plain reference written here: the standard library's json (through jsonfile,
which words the errors of text that is not JSON) and a walk of the decoded document that says, rule by rule, what
graph_json promises (the quirks real files have, the error texts naming the file). The property is: every op, field
by field and type by type (attribute dicts in order), the graph names, the model name, and for a bad file the same
error text. The documents are the real fixture, the builders' documents, documents generated from the schema with
fields of every type, and byte-level mutations of them (bad UTF-8, unpaired surrogates, a BOM, trailing data, deep
nesting, numbers of 19 digits and more, NaN, duplicate keys, escapes).
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dumpcmp.errors import ConfigError
from dumpcmp.graph.graph_json import Graph, InputRef, Op, TensorDesc, load_graph
from dumpcmp.support import jsonfile
from dumpcmp.support.native import core
from helpers import graphjson as gj

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _value(v):
    """A value with the types of everything in it (records field by field, dicts in order)."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v).__name__, tuple((f.name, _value(getattr(v, f.name))) for f in dataclasses.fields(v)))
    if isinstance(v, dict):
        return ("dict", tuple((_value(k), _value(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_value(x) for x in v))
    if isinstance(v, float) and v != v:
        return ("float", "nan")
    return (type(v).__name__, v)


def _snapshot(graph: Graph):
    return (graph.graph_names, graph.name, graph.path, graph.duplicate_names,
            tuple(_value(op) for op in graph.ops), tuple(graph.ops_by_name),
            tuple((g, tuple(ops)) for g, ops in graph._by_graph.items()))


def _outcome(read):
    try:
        return "ok", _snapshot(read())
    except ConfigError as error:
        return "error", str(error)


# --- the reference: a plain reading of the schema over json's values ---------------------------------------------
class _Bad(Exception):
    """A value the schema refuses: the error's text after the file's name."""


def _int(v):
    if type(v) is int:
        return v
    if type(v) is float and v.is_integer():
        return int(v)
    if type(v) is str:
        try:
            return int(v.strip())
        except ValueError as error:
            raise _Bad(str(error)) from None
    raise _Bad(f"expected an integer, got {v!r}")


def _bool(v):
    if type(v) is bool:
        return v
    if type(v) in (int, float):
        return v != 0
    if type(v) is str and v.strip().lower() in ("true", "false", "1", "0"):
        return v.strip().lower() in ("true", "1")
    raise _Bad(f"expected a bool, got {v!r}")


def _float(v):
    if type(v) in (int, float, str):
        try:
            return float(v)
        except (ValueError, OverflowError) as error:
            raise _Bad(str(error)) from None
    raise _Bad(f"expected a number, got {v!r}")


def _int_tuple(v):
    try:
        items = tuple(v)
    except TypeError as error:
        raise _Bad(str(error)) from None
    return tuple(_int(x) for x in items)


def _attr(value):
    if value is None:
        return None
    if type(value) is not dict:
        raise _Bad(f"attribute value is not an object: {value!r}")
    for kind, convert in (("s", str), ("i", _int), ("b", _bool), ("f", _float)):
        if kind in value:
            return None if value[kind] is None else convert(value[kind])
    if "list" not in value:
        return value
    lst = value["list"]
    if lst is None:
        return []
    if type(lst) is not dict:
        raise _Bad(f"'list' attribute value is not an object: {lst!r}")
    for kind in ("s", "i", "f", "b", "bt", "dt", "tf", "g", "t", "na"):
        items = lst.get(kind)
        if items is None:
            continue
        if type(items) is not list:
            raise _Bad(f"list field {kind!r} is not an array: {items!r}")
        convert = {"s": str, "i": _int, "f": _float, "b": _bool}.get(kind)
        return [convert(x) for x in items] if convert else items
    return []


def _attrs(raw, where):
    if raw is None:
        return {}
    if type(raw) is not list:
        raise _Bad(f"{where}: 'attr' is not an array")
    out = {}
    for n, item in enumerate(raw):
        key = item.get("key") if type(item) is dict else None
        if type(key) is not str:
            raise _Bad(f"{where}: attr[{n}] has no string 'key'")
        try:
            out[key] = _attr(item.get("value"))
        except _Bad as error:
            raise _Bad(f"{where}: attribute {key!r}: {error}") from None
    return out


def _text(v):
    return v if type(v) is str and v else None


def _desc(raw, where):
    if raw is None:
        return TensorDesc()
    if type(raw) is not dict:
        raise _Bad(f"{where} is not an object")
    attrs = _attrs(raw.get("attr"), where)
    try:
        shape = raw.get("shape")
        if type(shape) is dict:
            shape = () if shape.get("dim") is None else _int_tuple(shape["dim"])
        elif type(shape) is list:
            shape = _int_tuple(shape)
        elif shape is not None:
            raise _Bad(f"shape is neither an object nor an array: {shape!r}")
        origin_shape = None if attrs.get("origin_shape") is None else _int_tuple(attrs["origin_shape"])
    except _Bad as error:
        raise _Bad(f"{where}: bad shape: {error}") from None
    index = attrs.get("_datadump_origin_output_index")
    return TensorDesc(dtype=_text(raw.get("dtype")), layout=_text(raw.get("layout")), shape=shape,
                      origin_name=_text(attrs.get("_datadump_origin_name")),
                      origin_output_index=index if isinstance(index, int) else None,
                      origin_format=_text(attrs.get("_datadump_origin_format")) or _text(attrs.get("origin_format")),
                      origin_shape=origin_shape,
                      origin_data_type=_text(attrs.get("_datadump_origin_data_type"))
                      or _text(attrs.get("origin_data_type")), attrs=attrs)


def _op(raw, graph, n):
    if type(raw) is not dict:
        raise _Bad(f"graph {graph!r} op #{n} is not an object")
    name = raw.get("name")
    if type(name) is not str or not name:
        raise _Bad(f"graph {graph!r} op #{n} has no 'name'")
    where = f"graph {graph!r} op {name!r}"
    op_type = "" if raw.get("type") is None else raw["type"]
    if type(op_type) is not str:
        raise _Bad(f"{where}: 'type' is not a string")
    try:
        op_id = 0 if raw.get("id") is None else _int(raw["id"])
    except _Bad:
        raise _Bad(f"{where}: 'id' {raw['id']!r} is not an integer") from None
    inputs = raw.get("input") or []
    if type(inputs) is not list:
        raise _Bad(f"{where}: 'input' is not an array")
    data, control = [], []
    for slot, item in enumerate(inputs):
        if item is None or item == "":
            continue
        if type(item) is not str:
            raise _Bad(f"{where}: input {item!r} is not a string")
        producer, index = item, 0
        if ":" in item:
            producer, _, index = item.rpartition(":")
            try:
                index = int(index)
            except ValueError:
                raise _Bad(f"{where}: input {item!r} is not 'name:index'") from None
        if index < 0:
            control.append(producer)
        else:
            data.append(InputRef(slot, producer, index))
    attrs = _attrs(raw.get("attr"), where)
    originals = attrs.get("_datadump_original_op_names", "absent")
    if originals == "absent":
        originals = None
    elif originals is None:
        originals = ()
    elif type(originals) is list:
        originals = tuple(str(x) for x in originals if str(x))
    elif type(originals) is str:
        originals = (originals,) if originals else ()
    else:
        raise _Bad(f"{where}: _datadump_original_op_names is not a list of strings")
    l1 = attrs.get("_L1_fusion_sub_graph_no")
    descs = {}
    for key in ("input_desc", "output_desc"):
        items = raw.get(key) or []
        if type(items) is not list:
            raise _Bad(f"{where}: {key!r} is not an array")
        descs[key] = tuple(_desc(d, f"{where} {key}[{i}]") for i, d in enumerate(items))
    return Op(name=name, type=op_type, id=op_id, graph=graph, position=-1,
              inputs=tuple("" if x is None else x for x in inputs), data_inputs=tuple(data),
              control_inputs=tuple(control), attrs=attrs, input_desc=descs["input_desc"],
              output_desc=descs["output_desc"], original_op_names=originals,
              l1_fusion_no=None if l1 is None or str(l1) == "" else str(l1),
              is_multiop=bool(attrs.get("_datadump_is_multiop")), unmerged_original_op_names=originals)


def _reference_graph(doc, label) -> Graph:
    try:
        if type(doc) is not dict:
            raise _Bad("not a graph file: the top level is not a JSON object")
        if "graph" not in doc:
            raise _Bad("not a graph file: there is no 'graph' key")
        graphs = [doc["graph"]] if type(doc["graph"]) is dict else doc["graph"]
        if type(graphs) is not list:
            raise _Bad("'graph' is not an array")
        ops, names = [], []
        for g, raw in enumerate(graphs):
            if type(raw) is not dict:
                raise _Bad(f"graph #{g} is not an object")
            name = raw.get("name") if type(raw.get("name")) is str and raw.get("name") else f"graph_{g}"
            name = f"{name}#{g}" if name in names else name
            names.append(name)
            raw_ops = raw.get("op") or []
            if type(raw_ops) is not list:
                raise _Bad(f"graph {name!r}: 'op' is not an array")
            ops += [_op(op, name, n) for n, op in enumerate(raw_ops)]
    except _Bad as error:
        raise ConfigError(f"{label}: {error}") from None
    return Graph(ops, tuple(names), path=label, name=doc["name"] if type(doc.get("name")) is str else "")


def _python_reader(path: Path) -> Graph:
    """The reference: the standard reader (jsonfile words what is wrong with the text), then the walk above."""
    name = str(path)
    return _reference_graph(jsonfile.load(name, "graph file"), name)


def _check(path: Path) -> bool:
    """load_graph agrees with the reference on `path`; True when the file is a graph file."""
    native = _outcome(lambda: load_graph(path))
    reference = _outcome(lambda: _python_reader(path))
    assert native == reference
    return native[0] == "ok"


def _sample_doc():
    out = gj.desc(origin_name="a", origin_index=0, origin_format="NCHW", origin_shape=(1, 16, 4, 4))
    out["attr"].append({"key": "t", "value": {"t": {"desc": {"dtype": "DT_FLOAT"}, "data": "", "n": [1, 2.5, None]}}})
    out["attr"].append({"key": "f", "value": {"f": "0.05"}})
    conv = gj.op("b", "Conv2D", 1, inputs=["a:0", "", "c:-1", "noindex"], originals=["x", "y"], outputs=[out],
                 input_descs=[gj.desc(), gj.desc(dtype="", layout="")], l1="3", multiop=True)
    conv["attr"] += [gj.i("big", "-12"), gj.b("no", False), {"key": "fl", "value": {"f": 1}},
                     {"key": "lf", "value": {"list": {"f": [1, 2.5], "val_type": 3}}},
                     {"key": "lb", "value": {"list": {"b": [True, False]}}},
                     {"key": "ldt", "value": {"list": {"dt": [1, "DT_FLOAT", None]}}},
                     {"key": "nul", "value": None}, {"key": "nokey_value"},
                     {"key": "ll", "value": {"list_list_int": {"list_list_i": [{"list_i": [1, 2]}]}}},
                     {"key": "both", "value": {"list": {"i": [1]}, "s": None}},
                     {"key": "esc\u00e9\\\"", "value": {"s": "\u6f22\U0001F600\n\t\u0000"}}]
    return {"name": "model", "version": 2, "graph": [
        {"name": "g0", "op": [gj.op("a", "Data", 0), conv,
                              gj.op("trans_TransData_1", "TransData", 2, inputs=["b:0"], originals=[]),
                              {"name": "d", "type": None, "id": None, "input": None, "attr": None,
                               "output_desc": [None, {"shape": [2, 3]}, {"shape": {}}, {"shape": None}]}]},
        {"op": [gj.op("e", "Add", "4", inputs=["b:0", "a:1"])], "name": ""},
        {"name": "g0", "op": None, "extra": {"deep": [[[]]]}},
    ]}


def test_the_real_fixture_and_the_samples_are_read_as_the_reference_reads_them(tmp_path):
    fixture = gj.fixture_path()
    paths = [fixture] if fixture is not None else []
    paths.append(gj.write(tmp_path / "sample.json", _sample_doc()))
    paths.append(gj.write(tmp_path / "indented.json", json.dumps(_sample_doc(), indent=2, ensure_ascii=False)))
    paths.append(gj.write(tmp_path / "one_graph.json", {"graph": {"op": [gj.op("x", "Relu", 0)]}}))
    for path in paths:
        assert _check(path), path


def test_ops_out_of_id_order_are_sorted_as_before(tmp_path):
    doc = gj.document(gj.op("c", "Relu", 5, inputs=["a:0"]), gj.op("a", "Data", 0), gj.op("b", "Relu", 5),
                      gj.op("a", "Dup", 9))
    path = gj.write(tmp_path / "m.json", doc)
    assert _check(path)
    assert [(op.name, op.position) for op in load_graph(path).ops] == [("a", 0), ("c", 1), ("b", 2), ("a", 3)]


# (name, what is replaced in the sample's text, by what): each a file of its own
_EDITS = [
    ("nan", '{"i": 0}', '{"i": NaN}'), ("long_id", '"id": 2', '"id": 1234567890123456789'),
    ("long_dim", "[1, 16, 4, 4]", "[1, 16, 4, 99999999999999999999999]"), ("huge_exponent", '"id": 2', '"id": 1e999'),
    ("float_id", '"id": 2', '"id": 2.0'), ("negative_zero", '"id": 2', '"id": -0'),
    ("bad_utf8", '"Conv2D"', b'"Conv\xff2D"'), ("overlong", '"Conv2D"', b'"Conv\xc0\xafD"'),
    ("raw_surrogate", '"Conv2D"', b'"Conv\xed\xa0\x80D"'), ("lone_high", '"Conv2D"', '"Conv\\ud800D"'),
    ("lone_low", '"Conv2D"', '"Conv\\udc00D"'), ("two_highs", '"Conv2D"', '"\\ud800\\ud83d\\ude00"'),
    ("paired", '"Conv2D"', '"\\ud83d\\ude00"'), ("escaped_backslash_u", '"Conv2D"', '"\\\\ud800"'),
    ("control_char", '"Conv2D"', '"Conv\t2D"'),
    ("dup_graph", '{"name": "model"', '{"graph": [], "name": "model"'),
    ("dup_op_name", '"name": "b", "type"', '"name": "b", "name": "b2", "type"'),
    ("dup_value_key", '{"s": "NCHW"}', '{"s": "NCHW", "s": "NHWC"}'),
    ("dup_in_tensor", '"data": ""', '"data": "", "data": "x"'),
    ("op_not_object", '"op": [{"name": "a"', '"op": [5, {"name": "a"'), ("bad_input", '"a:0", ""', '"a:x", ""'),
    ("spaced_input_index", '"a:0", ""', '"a: 1", ""'), ("string_f", '"0.05"', '" 0.05"'), ("nan_f", '"0.05"', '"nan"'),
    ("string_dims", "[1, 16, 4, 4]", '[1, "16", 4, 4]'), ("string_origin_index", '{"i": 0}', '{"i": "0"}'),
    ("string_shape", '"shape": [2, 3]', '"shape": ["2", "-3"]'), ("spaced_dim", "[1, 16, 4, 4]", '[1, " 16", 4, 4]'),
    ("float_dim", "[1, 16, 4, 4]", "[1, 16.0, 4, 4]"), ("plus_dim", "[1, 16, 4, 4]", '[1, "+16", 4, 4]'),
]


def test_graphs_whose_names_meet_are_ordered_as_before(tmp_path):
    # the third graph's name becomes "x#2", the first one's own: both rank as the last, as parse_graph ranks them
    doc = {"graph": [{"name": "x#2", "op": [gj.op("a", "Data", 0)]}, {"name": "x", "op": [gj.op("b", "Relu", 0)]},
                     {"name": "x", "op": [gj.op("c", "Relu", 0)]}]}
    path = gj.write(tmp_path / "m.json", doc)
    assert _check(path)
    assert [op.name for op in load_graph(path).ops] == ["b", "a", "c"]


def test_bom_trailing_data_nan_and_long_numbers(tmp_path):
    text = json.dumps(_sample_doc()).encode()
    cases = {"bom": b"\xef\xbb\xbf" + text, "trailing": text + b" x", "trailing_space": text + b" \n", "empty": b"",
             "not_object": b"[1, 2]", "no_graph": b'{"name": "x"}'}
    for name, old, new in _EDITS:
        assert old.encode() in text, name
        cases[name] = text.replace(old.encode(), new if isinstance(new, bytes) else new.encode())
    for name, data in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_bytes(data)
        _check(path)
    for name in ("bom", "trailing_space", "paired", "escaped_backslash_u", "negative_zero", "string_origin_index",
                 "string_dims", "string_shape", "plus_dim"):
        assert _check(tmp_path / f"{name}.json"), name


@pytest.mark.parametrize("levels", [250, 256, 257, 300, 5000])
def test_deep_nesting_anywhere(tmp_path, levels):
    doc = _sample_doc()
    inner = "[" * (levels - 11) + "]" * (levels - 11)  # the tensor value's "data" sits 11 levels down
    text = json.dumps(doc).replace('"data": ""', f'"data": {inner}')
    path = tmp_path / "deep.json"
    path.write_text(text)
    assert _check(path) == (levels <= 256)
    top = "[" * levels + "]" * levels
    path.write_text('{"graph": [], "x": ' + top + "}")
    assert _check(path) == (levels < 256)


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70), st.floats(allow_nan=False),
                     st.sampled_from(["", "x", "12", "-3", " 4", "0.05", "1e3", "a:1", "nan", "\u00e9", "DT_FLOAT"]))
_ANY = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.sampled_from("sibfl"), inner, max_size=3)),
                    max_leaves=6)


def _maybe(strategy, odd=_ANY):
    """Mostly the usual shape, sometimes anything."""
    return st.one_of(strategy, strategy, strategy, odd)


_VALUE = _maybe(st.one_of(
    st.builds(lambda v: {"s": v}, st.text(max_size=5)), st.builds(lambda v: {"i": v}, st.integers(-99, 2 ** 40)),
    st.builds(lambda v: {"b": v}, st.booleans()), st.builds(lambda v: {"f": v}, st.floats(allow_nan=False)),
    st.builds(lambda k, v: {"list": {"val_type": 1, k: v}}, st.sampled_from(["s", "i", "f", "b", "dt", "na"]),
              st.lists(st.one_of(st.integers(-5, 99), st.text(max_size=3)), max_size=3)),
    st.builds(lambda v: {"list": v}, st.one_of(st.none(), st.just({"val_type": 2}))),
    st.builds(lambda v: {"t": v}, _ANY)))
_KEYS = st.sampled_from(["_datadump_original_op_names", "_datadump_origin_name", "_datadump_origin_output_index",
                         "_datadump_origin_format", "origin_format", "origin_shape", "_L1_fusion_sub_graph_no",
                         "_datadump_is_multiop", "_datadump_origin_data_type", "origin_data_type", "other"])
_ATTRS = _maybe(st.lists(st.builds(lambda k, v: {"key": k, "value": v}, _KEYS, _VALUE), max_size=4))
_DESC = _maybe(st.fixed_dictionaries({}, optional={
    "dtype": _maybe(st.sampled_from(["DT_FLOAT", "DT_FLOAT16", ""])), "layout": _maybe(st.just("NCHW")),
    "shape": _maybe(st.one_of(st.builds(lambda d: {"dim": d}, st.lists(st.integers(-1, 64), max_size=4)),
                              st.lists(st.integers(0, 9), max_size=3), st.just({}))),
    "attr": _ATTRS}))
_NAMES = st.sampled_from(["a", "b", "c", "op/1", "\u00e9t\u00e9", ""])
_OP = st.fixed_dictionaries({"name": _maybe(_NAMES)}, optional={
    "type": _maybe(st.sampled_from(["Conv2D", "Data"])), "id": _maybe(st.integers(0, 9)),
    "input": _maybe(st.lists(st.one_of(st.builds(lambda n, i: f"{n}:{i}", _NAMES, st.integers(-1, 3)),
                                       st.just(""), _NAMES), max_size=3)),
    "attr": _ATTRS, "input_desc": _maybe(st.lists(_DESC, max_size=2)),
    "output_desc": _maybe(st.lists(_DESC, max_size=2)), "extra": _ANY})
_GRAPH = st.fixed_dictionaries({}, optional={"name": _maybe(st.sampled_from(["g0", "g1", ""])),
                                             "op": _maybe(st.lists(_OP, max_size=4))})
_DOC = st.fixed_dictionaries({}, optional={"name": _maybe(st.just("m")),
                                           "graph": _maybe(st.one_of(st.lists(_GRAPH, max_size=3), _GRAPH))})


@SETTINGS
@given(doc=_DOC, ascii_only=st.booleans(), indent=st.sampled_from([None, 1]))
def test_generated_documents(tmp_path, doc, ascii_only, indent):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc, ensure_ascii=ascii_only, indent=indent), encoding="utf-8")
    event("a graph" if _check(path) else "an error")


_MUTATIONS = [b"", b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"\\u", b"\\ud800", b"\\udc00", b"\xff",
              b"\xc3", b"\xe2\x82", b"\x00", b"\n", b"0", b"-", b"1e", b"9" * 19, b"null", b"true", b"NaN",
              b"\xef\xbb\xbf"]


@SETTINGS
@given(seed=st.integers(0, 2 ** 32), cuts=st.integers(1, 3))
def test_mutated_documents(tmp_path, seed, cuts):
    rng = random.Random(seed)
    data = bytearray(json.dumps(_sample_doc(), ensure_ascii=rng.random() < 0.5).encode())
    for _ in range(cuts):
        at = rng.randrange(len(data))
        width = rng.choice([0, 1, 1, 2, 5])
        data[at:at + width] = rng.choice(_MUTATIONS)
    path = tmp_path / "m.json"
    path.write_bytes(bytes(data))
    event("a graph" if _check(path) else "an error")


def test_a_quant_fusion_merge_reads_both_files(tmp_path):
    f = gj.write(tmp_path / "f.json", gj.document(gj.op("q_conv", "Conv2D", 0, originals=["conv_quant"])))
    q = gj.write(tmp_path / "q.json", gj.document(gj.op("conv_quant", "Conv2D", 0, originals=["conv"])))
    assert _check(f) and _check(q)
    graph = load_graph(f, q)
    assert graph["q_conv"].original_op_names == ("conv",)
    assert graph["q_conv"].unmerged_original_op_names == ("conv_quant",)


def test_record_classes_that_changed_are_refused():
    @dataclasses.dataclass(frozen=True)
    class Other:
        name: str

    with pytest.raises(ValueError, match="fields"):
        core.graph.read_graph_json(b'{"graph": []}', Other, TensorDesc, InputRef)


def test_the_records_are_out_of_the_collectors_passes(tmp_path):
    """Millions of records hold no cycle: the reader leaves them untracked (the first collection after reading a
    300,000-op graph walked them for 0.7 s), and a dict given a container later is tracked again by CPython."""
    import gc

    path = gj.write(tmp_path / "m.json", _sample_doc())
    graph = load_graph(path)
    op = graph["b"]
    for thing in (op, op.inputs, op.data_inputs, op.data_inputs[0], op.output_desc, op.output_desc[0],
                  op.output_desc[0].shape, op.input_desc[0].attrs, op.input_desc[0].attrs["origin_shape"]):
        assert not gc.is_tracked(thing)
    attrs = op.input_desc[0].attrs
    attrs["mine"] = [attrs]
    assert gc.is_tracked(attrs)
    assert gc.is_tracked(op.output_desc[0].attrs)  # it holds a tensor value (any JSON): left to the collector
