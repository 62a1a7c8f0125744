"""Simulated device dumps of small ONNX models built here: values against an independent fp16 run and NumPy
formulas, layouts decoded by the spec's NumPy recipes (tests/helpers/layout_reference.py), names and folders, acl.json
filtering, the graph JSON read back by dumpcmp.graph.graph_json, and the pairing with `dumpcmp golden` ground truth."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from helpers import layout_reference as ref  # noqa: E402
from dumpcmp.dumps import layout as L  # noqa: E402
from dumpcmp.cli import main  # noqa: E402
from dumpcmp.dumps.dump import open_dump  # noqa: E402
from dumpcmp.errors import ConfigError, DumpcmpError  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402
from dumpcmp.graph.graph_json import load_graph  # noqa: E402
from dumpcmp.comparison.metrics import compare_arrays  # noqa: E402
from dumpcmp.dumps.naming import parse_name, sanitize  # noqa: E402
from dumpcmp.graph.pairing import DeviceOp, pair_with_ground_truth  # noqa: E402
from dumpcmp.dumps.scan import scan, scan_ground_truth  # noqa: E402
from dumpcmp.device.simulate import simulate, simulate_from_sources  # noqa: E402

F = TensorProto.FLOAT
GEMM_NAME = "head/fc.2"  # sanitised to head_fc_2 in file names


def _w(rng, shape, scale=0.3):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def build_net(path: Path) -> Path:
    """Conv+BN+Relu, Conv+Relu, a depthwise Conv, a residual Add, MaxPool, Flatten, MatMul+Add+Relu, Gemm,
    Softmax; 20 channels so that NC1HWC0 and FRACTAL_Z have padding."""
    rng = np.random.default_rng(7)
    inits = {
        "W1": _w(rng, (20, 3, 3, 3)), "B1": _w(rng, (20,)),
        "g1": rng.uniform(0.5, 1.5, 20).astype(np.float32), "b1": _w(rng, (20,)), "m1": _w(rng, (20,), 0.1),
        "v1": rng.uniform(0.5, 1.5, 20).astype(np.float32),
        "W2": _w(rng, (20, 20, 3, 3), 0.1), "Wd": _w(rng, (20, 1, 3, 3)),
        "Wm": _w(rng, (180, 24), 0.1), "Bm": _w(rng, (24,)), "Wg": _w(rng, (10, 24)), "Bg": _w(rng, (10,)),
    }
    nodes = [
        helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g1", "b1", "m1", "v1"], ["bn1_out"], name="bn1"),
        helper.make_node("Relu", ["bn1_out"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "W2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "Wd"], ["c3"], name="dw", pads=[1, 1, 1, 1], group=20),
        helper.make_node("Add", ["c3", "r1"], ["a"], name="residual"),
        helper.make_node("MaxPool", ["a"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("MatMul", ["f", "Wm"], ["mm"], name="fc1"),
        helper.make_node("Add", ["mm", "Bm"], ["mb"], name="fc1_bias"),
        helper.make_node("Relu", ["mb"], ["mr"], name="fc1_relu"),
        helper.make_node("Gemm", ["mr", "Wg", "Bg"], ["g"], name=GEMM_NAME, transB=1),
        helper.make_node("Softmax", ["g"], ["y"], name="softmax"),
    ]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", F, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", F, [1, 10])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def sample(k: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(100 + k).standard_normal((1, 3, 6, 6)).astype(np.float32)}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    base = tmp_path_factory.mktemp("simulate")
    model = build_net(base / "net.onnx")
    fp16 = simulate(model, base / "fp16", samples=[sample(0), sample(1)], dump_mode="all")
    int8 = simulate(model, base / "int8", precision="int8", samples=[sample(0)])
    dump_golden(model, sample(0), base / "golden")
    return {"base": base, "model": model, "fp16": fp16, "int8": int8, "golden": base / "golden"}


# -- helpers -----------------------------------------------------------------------------------------------------
def dumps_in(folder: Path) -> dict[str, tuple[object, object]]:
    """op name (as in the file name) -> (parsed name, Dump)."""
    out = {}
    for f in sorted(os.listdir(folder)):
        name = parse_name(f)
        out[name.op_name] = (name, open_dump(folder / f))
    return out


def decode(t) -> np.ndarray:
    """A dumped tensor in its framework layout, by the spec's NumPy recipes."""
    a = np.asarray(t.array())
    if t.format == "NC1HWC0":
        return ref.recipe_decode_nc1hwc0(a, t.original_shape[1])
    if t.format == "FRACTAL_NZ":
        return ref.recipe_decode_fractal_nz(a, tuple(t.original_shape))
    assert t.format in ("ND", "NCHW"), t.format
    return a.reshape(t.original_shape)


def fold_bn_reference(model):
    """Conv -> BatchNormalization folded as a compiler folds it, in float64, then float32: W * g / sqrt(v + eps),
    (b - m) * g / sqrt(v + eps) + beta; the BatchNormalization becomes an Identity."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}
    for bn in model.graph.node:
        if bn.op_type != "BatchNormalization":
            continue
        conv = producer[bn.input[0]]
        assert conv.op_type == "Conv"
        g, beta, m, v = (inits[x].astype(np.float64) for x in bn.input[1:5])
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        scale = g / np.sqrt(v + eps)
        w = inits[conv.input[1]].astype(np.float64)
        b = inits[conv.input[2]].astype(np.float64) if len(conv.input) > 2 else np.zeros(w.shape[0])
        wn, bn_name = conv.name + "_w_folded", conv.name + "_b_folded"
        model.graph.initializer.extend([
            numpy_helper.from_array((w * scale[:, None, None, None]).astype(np.float32), wn),
            numpy_helper.from_array(((b - m) * scale + beta).astype(np.float32), bn_name)])
        del conv.input[1:]
        conv.input.extend([wn, bn_name])
        y, name = bn.output[0], bn.name
        bn.CopyFrom(helper.make_node("Identity", [bn.input[0]], [y], name=name))
    return model


def reference_fp16_run(model_path: Path, feeds) -> dict[str, np.ndarray]:
    """An fp16 run built independently of dumpcmp: BatchNormalization folded into its Conv in float32 first, then
    every op on float32 copies of float16 tensors, its outputs rounded to float16, evaluated node by node with
    onnxruntime (one single-node model per node)."""
    model = fold_bn_reference(onnx.load(str(model_path)))
    values: dict[str, np.ndarray] = {k: v.astype(np.float16) for k, v in feeds.items()}
    for t in model.graph.initializer:
        values[t.name] = numpy_helper.to_array(t).astype(np.float16)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for node in model.graph.node:
        ins = [helper.make_tensor_value_info(n, F, list(values[n].shape)) for n in node.input]
        outs = [helper.make_tensor_value_info(n, F, None) for n in node.output]
        single = helper.make_model(helper.make_graph([node], "one", ins, outs),
                                   opset_imports=list(model.opset_import))
        single.ir_version = model.ir_version
        sess = ort.InferenceSession(single.SerializeToString(), so, providers=["CPUExecutionProvider"])
        results = sess.run(None, {n: values[n].astype(np.float32) for n in node.input})
        for n, v in zip(node.output, results):
            values[n] = v.astype(np.float16)
    return values


# ops of build_net -> the ONNX tensor their (last original's) output is
DEVICE_OUTPUT_TENSOR = {"conv1bn1relu1": "r1", "conv2relu2": "r2", "dw": "c3", "residual": "a", "pool": "p",
                        "flat": "f", "fc1": "mm", "fc1_bias": "mb", "fc1_relu": "mr", "head_fc_2": "g",
                        "softmax": "y"}


# -- values and layouts --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [0, 1])
def test_fp16_outputs_equal_an_independent_fp16_run(work, k):
    r = work["fp16"]
    expected = reference_fp16_run(work["model"], sample(k))
    dumps = dumps_in(r.sample_dirs[k])
    assert set(DEVICE_OUTPUT_TENSOR) <= set(dumps)
    for op, tensor in DEVICE_OUTPUT_TENSOR.items():
        out = dumps[op][1].outputs[0]
        assert out.data_type == "FLOAT16"
        np.testing.assert_array_equal(decode(out), expected[tensor], err_msg=op)
    x16 = sample(k)["x"].astype(np.float16)
    np.testing.assert_array_equal(decode(dumps["trans_Cast_0"][1].outputs[0]), x16)
    np.testing.assert_array_equal(decode(dumps["trans_Cast_0"][1].inputs[0]), sample(k)["x"])
    assert dumps["trans_Cast_0"][1].inputs[0].data_type == "FLOAT"
    np.testing.assert_array_equal(decode(dumps["trans_TransData_1"][1].outputs[0]), x16)
    last = [n for n in dumps if n.startswith("trans_Cast") and n != "trans_Cast_0"]
    assert len(last) == 1
    out = dumps[last[0]][1].outputs[0]
    assert out.data_type == "FLOAT"
    np.testing.assert_array_equal(decode(out), expected["y"].astype(np.float32))


def test_fp16_inputs_are_the_producers_outputs_and_elementwise_ops_round_once(work):
    dumps = dumps_in(work["fp16"].sample_dirs[0])
    add = dumps["residual"][1]
    a, b = decode(add.inputs[0]), decode(add.inputs[1])
    np.testing.assert_array_equal(a, decode(dumps["dw"][1].outputs[0]))
    np.testing.assert_array_equal(b, decode(dumps["conv1bn1relu1"][1].outputs[0]))
    np.testing.assert_array_equal(decode(add.outputs[0]), (a.astype(np.float32) + b.astype(np.float32))
                                  .astype(np.float16))
    pool_in = decode(dumps["pool"][1].inputs[0])
    np.testing.assert_array_equal(decode(dumps["pool"][1].outputs[0]),
                                  pool_in.reshape(1, 20, 3, 2, 3, 2).max(axis=(3, 5)))
    relu = dumps["fc1_relu"][1]
    np.testing.assert_array_equal(decode(relu.outputs[0]), np.maximum(decode(relu.inputs[0]), 0))


def test_layouts_shapes_and_weights(work):
    dumps = dumps_in(work["fp16"].sample_dirs[0])
    conv = dumps["conv1bn1relu1"][1]
    x, w, bias = conv.inputs
    assert (x.format, x.shape, x.original_shape) == ("NC1HWC0", (1, 1, 6, 6, 16), (1, 3, 6, 6))
    assert conv.outputs[0].format == "NC1HWC0" and conv.outputs[0].shape == (1, 2, 6, 6, 16)
    assert conv.outputs[0].original_shape == (1, 20, 6, 6)
    model = fold_bn_reference(onnx.load(str(work["model"])))
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert (w.format, w.data_type, w.sub_format) == ("FRACTAL_Z", "FLOAT16", 1)
    # the fused op reads the weights with the BatchNorm folded in (float32), as compiled
    np.testing.assert_array_equal(w.array(), ref.loops_fractal_z(weights["conv1_w_folded"].astype(np.float16), 16))
    assert (bias.format, bias.original_shape) == ("ND", (20,))
    dw_w = dumps["dw"][1].inputs[1]
    assert (dw_w.format, dw_w.sub_format, dw_w.original_shape) == ("FRACTAL_Z", 20, (20, 1, 3, 3))
    np.testing.assert_array_equal(dw_w.array(),
                                  ref.loops_fractal_z_grouped(weights["Wd"].astype(np.float16), 20, 16))
    for op in ("fc1", "head_fc_2"):
        out = dumps[op][1].outputs[0]
        assert out.format == "FRACTAL_NZ", op
    assert dumps["fc1"][1].outputs[0].shape == (2, 1, 16, 16)  # (1, 24): N1 = 2, M1 = 1
    assert dumps["flat"][1].outputs[0].format == "ND"
    assert dumps["softmax"][1].outputs[0].format == "ND"
    for _, d in dumps.values():
        for t in list(d.inputs) + list(d.outputs):
            assert t.original_shape is not None


def test_int8_quantize_and_dequantize_ops(work):
    r = work["int8"]
    dumps = dumps_in(r.sample_dirs[0])
    graph = json.loads(r.json_path.read_text())["graph"][0]["op"]
    by_name = {op["name"]: op for op in graph}
    quants = [op for op in graph if op["type"] == "AscendQuant"]
    dequants = [op for op in graph if op["type"] == "AscendDequant"]
    assert len(quants) == len(dequants) == 5  # inputs of conv1, conv2, dw, fc1 and the Gemm
    for op in quants:
        attrs = {a["key"]: a["value"] for a in op["attr"]}
        scale, offset = np.float32(attrs["scale"]["f"]), attrs["offset"]["i"]
        producer = op["input"][0].rpartition(":")[0]
        x = decode(dumps[re.sub(r"[./\\ ]", "_", producer)][1].outputs[0]).astype(np.float32)
        q = dumps[op["name"]][1].outputs[0]
        assert q.data_type == "INT8"
        expected = np.clip(np.rint(x / scale) + offset, -128, 127).astype(np.int8)
        if x.ndim == 4:
            assert q.format == "NC1HWC0" and q.shape[-1] == 32
        np.testing.assert_array_equal(decode(q), expected, err_msg=op["name"])
    for op in dequants:
        attrs = {a["key"]: a["value"] for a in op["attr"]}
        q = decode(dumps[op["input"][0].rpartition(":")[0]][1].outputs[0]).astype(np.float32)
        out = dumps[op["name"]][1].outputs[0]
        assert out.data_type == "FLOAT16"
        expected = ((q - attrs["offset"]["i"]) * np.float32(attrs["deq_scale"]["f"])).astype(np.float16)
        np.testing.assert_array_equal(decode(out), expected, err_msg=op["name"])
    weight = by_name["conv1bn1relu1"]["input"][1].rpartition(":")[0]
    desc = by_name[weight]["output_desc"][0]
    assert (desc["dtype"], desc["layout"], desc["shape"]["dim"]) == ("DT_INT8", "FRACTAL_Z", [9, 2, 16, 32])


# -- names and folders ---------------------------------------------------------------------------------------------
def test_tree_names_task_ids_and_timestamps(work):
    r = work["fp16"]
    rel = r.sample_dirs[1].relative_to(work["base"] / "fp16")
    assert re.fullmatch(r"\d{14}/0/net/1/1", rel.as_posix())
    graph = load_graph(r.json_path)
    position = {sanitize(op.name): op.position for op in graph.ops}
    for folder in r.sample_dirs:
        names = [parse_name(f) for f in os.listdir(folder)]
        assert all(len(str(n.timestamp)) == 16 for n in names)
        by_time = sorted(names, key=lambda n: n.timestamp)
        assert [n.task_id for n in by_time] == sorted(n.task_id for n in names)
        order = [position[n.op_name] for n in by_time]
        assert order == sorted(order)
    assert "head_fc_2" in dumps_in(r.sample_dirs[0])
    assert open_dump(next(iter(r.sample_dirs[0].glob("MatMulV2.head_fc_2.*")))).op_name == GEMM_NAME
    first = min(parse_name(f).timestamp for f in os.listdir(r.sample_dirs[1]))
    assert first > max(parse_name(f).timestamp for f in os.listdir(r.sample_dirs[0]))
    index = scan(work["base"] / "fp16")
    assert sorted(g.key.data_index for g in index) == [0, 1]
    assert all(g.key.model_name == "net" for g in index)


def test_every_run_gets_its_own_time_folder(tmp_path):
    model = build_tiny(tmp_path / "my model.v2.onnx")
    first = simulate(model, tmp_path / "out", seed=1, now=1_800_000_000.0)
    second = simulate(model, tmp_path / "out", seed=1, now=1_800_000_000.0)
    assert first.run_dir != second.run_dir
    assert int(second.run_dir.name) == int(first.run_dir.name) + 1  # 1_800_000_000 is a whole minute
    assert first.model_dir.parent.name == "my_model_v2"
    assert len(list(first.sample_dirs[0].iterdir())) == len(list(second.sample_dirs[0].iterdir())) > 0
    # the unnamed Sigmoid is named after its output, as the ground truth names it
    assert {n.split(".")[1] for n in os.listdir(first.sample_dirs[0])} == {"relu", "y", "trans_Cast_0",
                                                                           "trans_Cast_1"}


def build_tiny(path: Path) -> Path:
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Sigmoid", ["r"], ["y"])]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", F, [2, 5])],
                              [helper.make_tensor_value_info("y", F, [2, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


# -- acl.json ------------------------------------------------------------------------------------------------------
def write_acl(path: Path, dump: dict) -> Path:
    path.write_text(json.dumps({"dump": dump}))
    return path


@pytest.mark.parametrize("mode", ["input", "output", "all"])
def test_acl_json_layers_and_mode(work, tmp_path, mode):
    acl = write_acl(tmp_path / "acl.json", {
        "dump_list": [{"model_name": "other"}, {"model_name": "net", "layer": ["conv1bn1relu1", "head/fc.2",
                                                                              "conv1", "nothing"]}],
        "dump_path": str(tmp_path), "dump_mode": mode})
    r = simulate(work["model"], acl_json=acl, samples=[sample(0)], json_out=tmp_path / "g.json")
    assert r.run_dir.parent == tmp_path and r.mode == mode
    dumps = dumps_in(r.sample_dirs[0])
    assert set(dumps) == {"conv1bn1relu1", "head_fc_2"}
    for _, d in dumps.values():
        assert len(d.inputs) == (0 if mode == "output" else 3)
        assert len(d.outputs) == (0 if mode == "input" else 1)
    assert any("'nothing'" in n for n in r.notes)
    assert any("'conv1' was fused into 'conv1bn1relu1'" in n for n in r.notes)


def test_acl_json_model_without_layers_dumps_every_op(work, tmp_path):
    acl = write_acl(tmp_path / "acl.json", {"dump_list": [{"model_name": "net"}], "dump_path": "/nonexistent/x"})
    r = simulate(work["model"], tmp_path / "out", acl_json=acl, samples=[sample(0)])
    assert set(dumps_in(r.sample_dirs[0])) == {sanitize(op.name) for op in r.graph.ops if op.dumped}


def test_acl_json_problems_are_config_errors(work, tmp_path):
    bad = write_acl(tmp_path / "bad.json", {"dump_list": [{"model_name": "net"}], "dump_path": str(tmp_path),
                                             "dump_mode": "everything", "dump_mod": "x"})
    with pytest.raises(ConfigError) as info:
        simulate(work["model"], acl_json=bad, samples=[sample(0)])
    assert "dump.dump_mode" in str(info.value) and "dump_mod" in str(info.value)
    other = write_acl(tmp_path / "other.json", {"dump_list": [{"model_name": "resnet"}], "dump_path": str(tmp_path)})
    with pytest.raises(ConfigError, match="'resnet', not this model"):
        simulate(work["model"], acl_json=other, samples=[sample(0)])
    r = simulate(work["model"], acl_json=other, samples=[sample(0)], model_name="resnet",
                 json_out=tmp_path / "m.json")
    assert r.model_dir.parent.name == "resnet"
    no_layer = write_acl(tmp_path / "none.json", {"dump_list": [{"model_name": "net", "layer": ["x"]}],
                                                  "dump_path": str(tmp_path)})
    with pytest.raises(ConfigError, match="selects no op"):
        simulate(work["model"], acl_json=no_layer, samples=[sample(0)])


# -- the graph JSON ------------------------------------------------------------------------------------------------
def test_graph_json_structure(work):
    doc = json.loads(work["fp16"].json_path.read_text())
    ops = doc["graph"][0]["op"]
    assert [op["id"] for op in ops] == list(range(len(ops)))
    seen: set[str] = set()
    for op in ops:
        for item in op["input"]:
            if item:
                producer, _, index = item.rpartition(":")
                assert producer in seen and int(index) >= 0
        seen.add(op["name"])
        for a in op["attr"]:
            assert set(a) == {"key", "value"} and len(a["value"]) == 1
    by_name = {op["name"]: op for op in ops}
    cast = by_name["trans_Cast_0"]
    assert cast["type"] == "Cast" and cast["input"] == ["x:0"]
    assert {"key": "_datadump_original_op_names", "value": {"list": {"val_type": "VT_LIST_STRING"}}} in cast["attr"]
    fused = by_name["conv1bn1relu1"]
    assert fused["type"] == "Conv2D"
    originals = next(a for a in fused["attr"] if a["key"] == "_datadump_original_op_names")
    assert originals["value"]["list"]["s"] == ["conv1", "bn1", "relu1"]
    out_attrs = {a["key"]: a["value"] for a in fused["output_desc"][0]["attr"]}
    assert out_attrs["_datadump_origin_name"] == {"s": "relu1"}
    assert out_attrs["_datadump_origin_output_index"] == {"i": 0}
    assert out_attrs["_datadump_origin_format"] == {"s": "NCHW"}
    assert out_attrs["origin_shape"]["list"]["i"] == [1, 20, 6, 6]
    assert fused["output_desc"][0]["layout"] == "NC1HWC0" and fused["output_desc"][0]["dtype"] == "DT_FLOAT16"
    assert fused["output_desc"][0]["shape"]["dim"] == [1, 2, 6, 6, 16]
    assert ops[-1]["type"] == "NetOutput"


def test_graph_json_round_trip(work):
    r = work["fp16"]
    g = load_graph(r.json_path)
    assert [op.name for op in g.ops] == [op.name for op in r.graph.ops]
    assert g["trans_Cast_0"].is_inserted and g["trans_TransData_1"].is_inserted
    assert g.original_names("conv2relu2") == ("conv2", "relu2")
    assert g.original_names("residual") == ("residual",)
    assert g.producer("residual", 1)[0].name == "conv1bn1relu1"
    desc = g["fc1"].output(0)
    assert (desc.layout, desc.origin_name, desc.origin_shape, desc.origin_format) == ("FRACTAL_NZ", "fc1", (1, 24),
                                                                                      "ND")


# -- pairing with ground truth -------------------------------------------------------------------------------------
def compare_with_ground_truth(result, golden: Path) -> dict[str, float]:
    """tensor index -> cosine similarity of every comparable pair, the device side decoded by dumpcmp.dumps.layout."""
    gt = scan_ground_truth(golden)
    group = next(iter(scan(result.sample_dirs[0])))
    ops = []
    for e in group:
        d = open_dump(e.path)
        ops.append(DeviceOp(e.name.op_name, e.name.op_type, len(d.inputs), len(d.outputs), e.name.timestamp, e.path))
    pairs = pair_with_ground_truth(ops, dict(gt.files), load_graph(result.json_path))
    cosines = {}
    for p in pairs:
        if not p.comparable:
            continue
        t = getattr(open_dump(p.npu_ref), p.kind + "s")[p.index]
        truth = np.asarray(p.ground_truth_ref.open())
        plain = "ND" if t.format == "FRACTAL_NZ" else "NCHW"
        a = L.convert(t.array(), t.format, plain, original_shape=t.original_shape, groups=max(t.sub_format, 1)) \
            if t.format not in ("ND", "NCHW") else t.array()
        cosines[p.tensor_index] = compare_arrays(np.ascontiguousarray(a.reshape(truth.shape), np.float32),
                                                 np.ascontiguousarray(truth, np.float32)).cosine_similarity
    return cosines


def test_fp16_pairs_with_golden(work):
    cos = compare_with_ground_truth(work["fp16"], work["golden"])
    for op in DEVICE_OUTPUT_TENSOR:
        assert cos[f"{op}:output:0"] > 0.999, op
    # fused ops' outputs find the last original's ground truth, their inputs the producer's
    assert cos["conv2relu2:input:0"] > 0.999 and cos["trans_Cast_0:output:0"] > 0.999
    assert all(v > 0.999 for v in cos.values())
    gt = scan_ground_truth(work["golden"])
    assert gt.get("relu1", 0) is not None and gt.get("conv1", 0) is not None


def test_int8_error_ranks_above_fp16(work):
    c16 = compare_with_ground_truth(work["fp16"], work["golden"])
    c8 = compare_with_ground_truth(work["int8"], work["golden"])
    common = [k for k in c8 if k in c16 and k.endswith("output:0") and not k.startswith("trans_")]
    assert len(common) >= 8
    err16 = np.mean([1 - c16[k] for k in common])
    err8 = np.mean([1 - c8[k] for k in common])
    assert err8 > 3 * err16
    assert min(c8[k] for k in common) > 0.99
    # the dequantized activations are compared with the fp32 tensor that was quantized
    assert any(k.endswith("DequantizeLinear:output:0") for k in c8)


# -- CLI and errors ------------------------------------------------------------------------------------------------
def test_cli_with_sources(work, tmp_path, capsys):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for k in range(2):
        np.save(inputs / f"{k}.npy", sample(k)["x"])
    code = main(["simulate", str(work["model"]), "--precision", "fp16", "-i", str(inputs), "-o",
                 str(tmp_path / "out"), "--device-id", "3", "--model-id", "7", "--dump-mode", "output"])
    assert code == 0
    text = capsys.readouterr().out
    assert "2 samples" in text and "conv1+bn1+relu1" in text
    [run] = [p for p in (tmp_path / "out").iterdir() if p.is_dir()]
    sample_dirs = sorted(p for p in (run / "3" / "net" / "7").iterdir())
    assert [p.name for p in sample_dirs] == ["0", "1"]
    expected = dumps_in(work["fp16"].sample_dirs[1])
    got = dumps_in(sample_dirs[1])
    assert set(got) == set(expected)
    np.testing.assert_array_equal(got["softmax"][1].outputs[0].array(), expected["softmax"][1].outputs[0].array())
    assert (tmp_path / "out" / "model.json").is_file()


def test_same_seed_gives_golden_the_same_random_input(work, tmp_path):
    r = simulate_from_sources(work["model"], tmp_path / "sim", seed=5)
    golden = dump_golden(work["model"], None, tmp_path / "gt", seed=5)
    x = np.load(tmp_path / "gt" / next(rec.file for rec in golden.records if rec.op_name == "x"))
    cast = dumps_in(r.sample_dirs[0])["trans_Cast_0"][1]
    np.testing.assert_array_equal(cast.outputs[0].array(), x.astype(np.float16))


def test_bad_input_exits_2(work, tmp_path, capsys):
    assert main(["simulate", str(work["model"]), "-i", f"nosuch={tmp_path / 'x.npy'}", "-o", str(tmp_path)]) == 2
    assert "no input 'nosuch'" in capsys.readouterr().err
    bad = write_acl(tmp_path / "acl.json", {"dump_list": [{"model_name": "net"}], "dump_path": str(tmp_path),
                                             "dump_mode": "everything"})
    assert main(["simulate", str(work["model"]), "--seed", "0", "--acl-json", str(bad)]) == 2
    assert "dump_mode" in capsys.readouterr().err
    assert main(["simulate", str(tmp_path / "missing.onnx"), "--seed", "0", "-o", str(tmp_path)]) == 2
    with pytest.raises(ConfigError, match="no input 'y'"):
        simulate(work["model"], tmp_path / "o", samples=[{"y": np.zeros((1, 3, 6, 6), np.float32)}])
    with pytest.raises(ConfigError, match="must have shape"):
        simulate(work["model"], tmp_path / "o", samples=[{"x": np.zeros((1, 3, 5, 6), np.float32)}])
    with pytest.raises(ConfigError, match="precision"):
        simulate(work["model"], tmp_path / "o", precision="int4", seed=0)


def test_model_that_fails_to_run(tmp_path):
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")]
    graph = helper.make_graph(nodes, "broken", [helper.make_tensor_value_info("x", F, [2, 5])],
                              [helper.make_tensor_value_info("y", F, None)],
                              [numpy_helper.from_array(np.array([3, 3], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "broken.onnx"))
    with pytest.raises(DumpcmpError, match="broken.onnx"):
        simulate(tmp_path / "broken.onnx", tmp_path / "out", seed=0)
    assert not (tmp_path / "out").exists()  # the dump path this failed run made is removed
    (tmp_path / "kept").mkdir()
    with pytest.raises(DumpcmpError, match="broken.onnx"):
        simulate(tmp_path / "broken.onnx", tmp_path / "kept", seed=0)
    assert not any((tmp_path / "kept").iterdir())  # a folder that was there stays, without the run's time folder
