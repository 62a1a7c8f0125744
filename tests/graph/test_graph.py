"""The graph JSON parser: the real compiler file, hand-built documents for each quirk, bad files."""

from __future__ import annotations

import json

import pytest

from helpers import graphjson as gj
from dumpcmp.errors import ConfigError
from dumpcmp.graph.graph_json import attr_value, load_graph, merge, parse_graph

FIXTURE = gj.fixture_path()
needs_fixture = pytest.mark.skipif(FIXTURE is None, reason="shared fixture atc_model_ascend310.json not found")


@pytest.fixture(scope="module")
def real():
    return load_graph(FIXTURE)


@pytest.fixture(scope="module")
def real_json():
    return json.loads(FIXTURE.read_text())


# --- the real file ------------------------------------------------------------------------------------------------
@needs_fixture
def test_real_file_ops_in_execution_order(real, real_json):
    raw_ops = real_json["graph"][0]["op"]
    assert len(real) == len(raw_ops) == 19
    assert real.graph_names == ("sub_model_NPU_0",)
    assert real.name == "sub_model"
    # The Data op boxes_all has no "id" (protobuf's JSON drops a zero): it runs first.
    assert "id" not in next(o for o in raw_ops if o["name"] == "boxes_all")
    assert [op.id for op in real.ops] == list(range(19))
    assert real.ops[0].name == "boxes_all"
    assert real.ops[-1].name == "Node_Output"
    assert [op.position for op in real.ops] == list(range(19))
    assert real["PartitionedCall_Gather_1221_gatherv2_3"].type == "GatherV2"


@needs_fixture
def test_real_file_original_names(real):
    assert real.original_names("PartitionedCall_Gather_1221_gatherv2_3") == ("Gather_1221",)
    assert real.original_names("PartitionedCall_Gather_1221_const_data_2") == ("Gather_1221",)
    assert real.original_names("Concat_1211") == ("Concat_1211",)
    # Attribute absent: the op is its own original.
    assert real["BatchMultiClassNMS_1203"].original_op_names is None
    assert real.original_names("BatchMultiClassNMS_1203") == ("BatchMultiClassNMS_1203",)
    inserted = {op.name for op in real if op.is_inserted}
    assert inserted == {"trans_Cast_0", "trans_Cast_2", "trans_Cast_6", "trans_Cast_7", "Node_Output"}
    assert real.original_names("trans_Cast_6") == ()


@needs_fixture
def test_real_file_inputs_and_producers(real):
    nms = real["BatchMultiClassNMS_1203"]
    # Two absent optional inputs written as "" are kept in the raw list but are not data inputs.
    assert nms.inputs == (
        "BatchMultiClassNMS_1203_Input0_TransposeBefore:0",
        "BatchMultiClassNMS_1203_Input1_TransposeBefore:0",
        "",
        "",
    )
    assert [(r.slot, r.producer, r.index) for r in nms.data_inputs] == [
        (0, "BatchMultiClassNMS_1203_Input0_TransposeBefore", 0),
        (1, "BatchMultiClassNMS_1203_Input1_TransposeBefore", 0),
    ]
    assert [(p.name, k) for p, k in real.producers(nms)] == [
        ("BatchMultiClassNMS_1203_Input0_TransposeBefore", 0),
        ("BatchMultiClassNMS_1203_Input1_TransposeBefore", 0),
    ]
    concat = real["Concat_1211"]
    assert [(p.name, k) for p, k in real.producers(concat)] == [
        ("BatchMultiClassNMS_1203_Output0TransposeAfter", 0),
        ("BatchMultiClassNMS_1203", 1),
    ]
    assert real.producer("Cast_1206", 0)[0].name == "BatchMultiClassNMS_1203"
    assert real.producer("Cast_1206", 0)[1] == 2
    assert real.producer("Cast_1206", 1) is None
    # The Data op's input list is [""]: no data inputs.
    assert real["boxes_all"].data_inputs == ()
    assert len(nms.input_desc) == 4 and nms.input_desc[2].layout == "FORMAT_RESERVED"
    consumers = {(c.name, n) for c, n in real.consumers("BatchMultiClassNMS_1203")}
    assert consumers == {("Cast_1206", 0), ("BatchMultiClassNMS_1203_Output0TransposeAfter", 0), ("Concat_1211", 1)}


@needs_fixture
def test_real_file_output_descs(real, real_json):
    cast7 = real["trans_Cast_7"].output(0)
    assert (cast7.origin_name, cast7.origin_output_index) == ("Gather_1221", 0)
    assert cast7.origin_format == "ND" and cast7.origin_shape == (100,)
    assert cast7.dtype == "DT_FLOAT" and cast7.origin_data_type == "DT_FLOAT"
    nms = real["BatchMultiClassNMS_1203"]
    assert [d.shape for d in nms.output_desc] == [(1, 4, 100), (1, 100), (1, 100), (1, 8)]
    assert nms.output(0).origin_name is None and nms.output(0).origin_format == "ND"
    # origin_shape written as a list with only val_type: a scalar.
    assert real["onnx::Gather_1764_0"].output(0).origin_shape == ()
    # A null attribute value survives as None.
    assert "shape_range" in nms.input_desc[0].attrs and nms.input_desc[0].attrs["shape_range"] is None
    # Cross-check every explicit origin against the raw JSON, read independently.
    expected = {}
    for raw in real_json["graph"][0]["op"]:
        for n, d in enumerate(raw.get("output_desc", [])):
            attrs = {a["key"]: a["value"] for a in d.get("attr", [])}
            if "_datadump_origin_name" in attrs:
                expected[(raw["name"], n)] = (
                    attrs["_datadump_origin_name"]["s"],
                    int(attrs["_datadump_origin_output_index"]["i"]),
                )
    got = {
        (op.name, n): (d.origin_name, d.origin_output_index)
        for op in real
        for n, d in enumerate(op.output_desc)
        if d.origin_name is not None
    }
    assert got == expected and len(expected) == 5


# --- attribute values ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ({"s": "NCHW"}, "NCHW"),
        ({"s": ""}, ""),
        ({"i": 7}, 7),
        ({"i": "2150532096"}, 2150532096),
        ({"i": "-3"}, -3),
        ({"b": True}, True),
        ({"b": False}, False),
        ({"f": 0.5}, 0.5),
        ({"f": 2}, 2.0),
        ({"list": {"i": [2560, "50217"], "val_type": "VT_LIST_INT"}}, [2560, 50217]),
        ({"list": {"s": ["a", "b"], "val_type": "VT_LIST_STRING"}}, ["a", "b"]),
        ({"list": {"b": [True, False]}}, [True, False]),
        ({"list": {"val_type": "VT_LIST_STRING"}}, []),
        ({"list": {"s": [], "val_type": 1}}, []),
        (None, None),
    ],
)
def test_attr_value(raw, value):
    got = attr_value(raw)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("raw", [{"i": "twelve"}, {"i": True}, {"list": {"i": "1"}}, "plain string"])
def test_attr_value_rejects_malformed(raw):
    with pytest.raises(ValueError):
        attr_value(raw)


# --- synthetic documents ------------------------------------------------------------------------------------------
def test_control_edges_and_absent_inputs_keep_data_numbering(tmp_path):
    doc = gj.document(
        gj.op("a", "Data", 0),
        gj.op("b", "Data", 1),
        gj.op("ctrl", "NoOp", 2),
        gj.op("c", "Add", 3, inputs=["a:0", "ctrl:-1", "", "b:0"]),
    )
    g = load_graph(gj.write(tmp_path / "g.json", doc))
    c = g["c"]
    assert [(r.slot, r.producer, r.index) for r in c.data_inputs] == [(0, "a", 0), (3, "b", 0)]
    assert c.control_inputs == ("ctrl",)
    assert g.producer(c, 1)[0].name == "b"
    assert g.producer(c, 2) is None


def test_ids_given_as_strings_and_out_of_file_order(tmp_path):
    doc = gj.document(gj.op("late", "Relu", "5"), gj.op("early", "Conv2D", 2), gj.op("first", "Data", None))
    g = load_graph(gj.write(tmp_path / "g.json", doc))
    assert [op.name for op in g.ops] == ["first", "early", "late"]
    assert g["late"].id == 5


def test_several_graphs_kept_with_names(tmp_path):
    doc = {
        "name": "m",
        "graph": [
            {"name": "main", "op": [gj.op("x", "Data", 0), gj.op("y", "Relu", 1, inputs=["x:0"])]},
            {"name": "sub", "op": [gj.op("x", "Data", 0), gj.op("z", "Relu", 1, inputs=["x:0"])]},
        ],
    }
    g = load_graph(gj.write(tmp_path / "g.json", doc))
    assert g.graph_names == ("main", "sub")
    assert [(op.graph, op.name) for op in g.ops] == [("main", "x"), ("main", "y"), ("sub", "x"), ("sub", "z")]
    assert g.duplicate_names == ["x"]
    # Producers resolve in the consumer's own graph.
    assert g.producer("z", 0)[0].graph == "sub"
    assert g["x"].graph == "main"


def test_origin_format_falls_back_to_ge_origin_format(tmp_path):
    doc = gj.document(
        gj.op("a", "Conv2D", 0, outputs=[gj.desc(ge_origin_format="NHWC")]),
        gj.op("b", "Conv2D", 1, outputs=[gj.desc(origin_format="NCHW", ge_origin_format="NHWC")]),
        gj.op("c", "Conv2D", 2, outputs=[gj.desc(ge_origin_format=None, origin_shape=None)]),
    )
    g = load_graph(gj.write(tmp_path / "g.json", doc))
    assert g["a"].output(0).origin_format == "NHWC"
    assert g["b"].output(0).origin_format == "NCHW"
    assert g["c"].output(0).origin_format is None and g["c"].output(0).origin_shape is None
    assert g["a"].output(0).shape == (1, 1, 4, 4, 16) and g["a"].output(0).origin_shape == (1, 16, 4, 4)


def test_op_attributes(tmp_path):
    doc = gj.document(
        gj.op("fused", "Conv2D", 0, originals=["conv1", "bn1", "relu1"], l1="7", multiop=True),
        gj.op("inserted", "Cast", 1, originals=[]),
        gj.op("own", "Relu", 2),
    )
    g = load_graph(gj.write(tmp_path / "g.json", doc))
    fused = g["fused"]
    assert fused.original_op_names == ("conv1", "bn1", "relu1")
    assert fused.l1_fusion_no == "7" and fused.is_multiop
    assert g["inserted"].is_inserted and g.original_names("inserted") == ()
    assert not g["own"].is_inserted and g.original_names("own") == ("own",)
    assert g["own"].l1_fusion_no is None and not g["own"].is_multiop


def test_null_and_missing_parts_are_tolerated(tmp_path):
    doc = {
        "graph": [
            {
                "op": [
                    {"name": "a", "type": "Data", "attr": None, "input": [""], "output_desc": [None]},
                    {"name": "b", "type": "Relu", "id": 1, "input": ["a:0"],
                     "attr": [{"key": "weird", "value": None}, {"key": "_datadump_original_op_names", "value": None}]},
                ]
            }
        ]
    }
    g = load_graph(gj.write(tmp_path / "g.json", doc))
    assert g.graph_names == ("graph_0",)
    assert g["a"].output(0).origin_name is None
    assert g["b"].attrs["weird"] is None
    assert g["b"].is_inserted


# --- bad files ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not a JSON file"),
        ("[1, 2]", "top level is not a JSON object"),
        ('{"name": "m"}', "no 'graph' key"),
        ('{"graph": 3}', "'graph' is not an array"),
        ('{"graph": [{"name": "g", "op": {"name": "x"}}]}', "'op' is not an array"),
        ('{"graph": [{"name": "g", "op": [{"type": "Relu"}]}]}', "op #0 has no 'name'"),
        ('{"graph": [{"name": "g", "op": [{"name": "x", "id": "one"}]}]}', "'id'"),
        ('{"graph": [{"name": "g", "op": [{"name": "x", "attr": [{"key": "k", "value": {"i": "abc"}}]}]}]}',
         "attribute 'k'"),
        ('{"graph": [{"name": "g", "op": [{"name": "x", "input": ["y:zero"]}]}]}', "not 'name:index'"),
        ('{"graph": [{"name": "g", "op": [{"name": "x", "output_desc": [{"shape": {"dim": ["a"]}}]}]}]}',
         "bad shape"),
        (b"\xff\xfe\x00garbage", "not a JSON file"),
    ],
)
def test_bad_graph_files_name_the_file(tmp_path, content, problem):
    path = tmp_path / "broken_model.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(ConfigError) as info:
        load_graph(path)
    message = str(info.value)
    assert str(path) in message and problem in message


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="nowhere.json"):
        load_graph(tmp_path / "nowhere.json")


def test_bad_quant_file_is_named(tmp_path):
    good = gj.write(tmp_path / "model.json", gj.document(gj.op("a", "Data", 0)))
    bad = gj.write(tmp_path / "quant.json", '{"nothing": 1}')
    with pytest.raises(ConfigError, match="quant.json"):
        load_graph(good, quant_fusion=bad)


# --- quantization fusion rules ------------------------------------------------------------------------------------
def _quant_pair(tmp_path):
    # The compiled graph of a quantized Caffe model: names are the quantized model's layers.
    fusion = gj.document(
        gj.op("data", "Data", 0),
        gj.op("conv1_quant_layer", "AscendQuant", 1, inputs=["data:0"], originals=["conv1_quant_layer"],
              outputs=[gj.desc(dtype="DT_INT8", origin_name="conv1_quant_layer", origin_index=0)]),
        gj.op("conv1relu1", "Conv2D", 2, inputs=["conv1_quant_layer:0"], originals=["conv1", "relu1"],
              outputs=[gj.desc(origin_name="conv1", origin_index=0)]),
        gj.op("pool1", "Pooling", 3, inputs=["conv1relu1:0"]),
    )
    # The compression toolkit's rules: the quantized conv1 stands for conv1+bn1+scale1 of the float model, the
    # quant layer for nothing; relu1 and pool1 are unchanged so the file does not list them.
    quant = gj.document(
        gj.op("conv1", "Convolution", 0, originals=["conv1", "bn1", "scale1"],
              outputs=[gj.desc(origin_name="scale1", origin_index=0)]),
        gj.op("conv1_quant_layer", "Quant", 1, originals=[]),
    )
    return gj.write(tmp_path / "model.json", fusion), gj.write(tmp_path / "quant.json", quant)


def test_quant_fusion_rules_compose_with_the_graph(tmp_path):
    f_path, q_path = _quant_pair(tmp_path)
    g = load_graph(f_path, quant_fusion=q_path)
    again = merge(load_graph(f_path), load_graph(q_path))
    assert [(op.name, op.original_op_names) for op in g] == [(op.name, op.original_op_names) for op in again]
    conv = g["conv1relu1"]
    assert conv.original_op_names == ("conv1", "bn1", "scale1", "relu1")
    assert conv.unmerged_original_op_names == ("conv1", "relu1")
    # The explicit origin "conv1" is followed through the rules to the float model's tensor.
    assert (conv.output(0).origin_name, conv.output(0).origin_output_index) == ("scale1", 0)
    quant_op = g["conv1_quant_layer"]
    assert quant_op.original_op_names == () and quant_op.unmerged_original_op_names == ("conv1_quant_layer",)
    assert quant_op.output(0).origin_name is None
    # Ops the rules do not mention keep what they had.
    assert g["pool1"].original_op_names is None and g.original_names("pool1") == ("pool1",)
    assert g.path == str(f_path)


def test_quant_file_alone_is_a_graph(tmp_path):
    _, q_path = _quant_pair(tmp_path)
    g = load_graph(q_path)
    assert g.original_names("conv1") == ("conv1", "bn1", "scale1")


def test_parse_graph_without_path_labels_the_document():
    with pytest.raises(ConfigError, match="<graph JSON>"):
        parse_graph({"op": []})


def test_ops_shared_by_two_graphs_keep_each_graphs_order():
    """A parsed op takes its place in itself (no copy, #35); an op placed by one Graph is copied by another that
    orders it elsewhere, and the first Graph's op keeps its place."""
    from dumpcmp.graph.graph_json import Graph

    doc = {"graph": [{"name": "a", "op": [{"name": "x", "id": 1}, {"name": "y", "id": 0}]}]}
    first = parse_graph(doc)
    ops = list(first.ops)
    assert [(o.name, o.position) for o in ops] == [("y", 0), ("x", 1)]
    reordered = Graph([ops[1]], ("a",))
    assert [(o.name, o.position) for o in reordered.ops] == [("x", 0)]
    assert [(o.name, o.position) for o in first.ops] == [("y", 0), ("x", 1)]
