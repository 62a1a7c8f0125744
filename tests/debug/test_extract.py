"""`dumpcmp extract`: the demo network and a real one (tests/helpers/realnets.py) simulated as the device; the sub-model
against an independent node-by-node replay (one-node models) on the device inputs decoded by the spec's NumPy recipe
(tests/helpers/layout_reference.py), against the ground truth with --data ground-truth, the dump files and export.log
against the graph JSON, the acl.json through `acl-json check` and through a simulated device run of the sub-model,
and the errors (nothing left behind)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from helpers import layout_reference as ref  # noqa: E402
from dumpcmp.cli import main  # noqa: E402
from dumpcmp.cli.demo import build_model  # noqa: E402
from dumpcmp.dumps.dump import open_dump  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    base = tmp_path_factory.mktemp("extract")
    model = build_model(base / "demo_net.onnx")
    x = np.random.default_rng(5).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(base / "x.npy", x)
    sim = simulate(model, base / "dump", samples=[{"input": x}])
    dump_golden(model, {"input": x}, base / "gt")
    return {"base": base, "model": model, "dump": base / "dump", "json": sim.json_path, "gt": base / "gt",
            "files": {p.name.split(".")[1]: p for p in sim.files}, "x": x}


def run_extract(demo, out, *args, capsys=None):
    code = main(["extract", str(demo["model"]), *args, "-l", str(demo["dump"]), "-f", str(demo["json"]),
                 "-r", str(demo["gt"]), "-o", str(out)])
    folders = sorted(Path(out).glob("dump_result_*")) if Path(out).is_dir() else []
    return code, folders


def replay(model_path: Path, nodes: list[str], feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The original model's nodes run one at a time, each as a one-node model of its own in onnxruntime, values
    carried between them here (no cut of the graph, no sub-model)."""
    from onnx import helper

    m = onnx.load(str(model_path))
    weights = {t.name: t for t in m.graph.initializer}
    values = dict(feeds)
    for node in m.graph.node:
        if node.name not in nodes and node.op_type != "Constant":
            continue
        ins = [x for x in node.input if x and x not in weights]
        g = helper.make_graph(
            [node], "one",
            [helper.make_tensor_value_info(x, helper.np_dtype_to_tensor_dtype(values[x].dtype), values[x].shape)
             for x in ins],
            [helper.ValueInfoProto(name=x) for x in node.output if x],
            initializer=[weights[x] for x in node.input if x in weights])
        one = helper.make_model(g, opset_imports=list(m.opset_import))
        one.ir_version = m.ir_version
        results = ort.InferenceSession(one.SerializeToString()).run(None, {x: values[x] for x in ins})
        values.update(zip([x for x in node.output if x], results))
    return values


def device_output(path: Path) -> np.ndarray:
    t = open_dump(path).outputs[0]
    assert t.format == "NC1HWC0"
    return ref.recipe_decode_nc1hwc0(np.asarray(t.array()), t.original_shape[1]).astype(np.float32)


def test_list_prints_layers_in_order_with_shapes_and_device_ops(demo, capsys):
    assert main(["extract", str(demo["model"]), "--list", "-f", str(demo["json"])]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["#", "layer", "type", "output", "shape", "device", "op"]
    names = [line.split()[1] for line in lines[1:]]
    assert names == ["conv1", "bn1", "relu1", "pool1", "conv2", "bn2", "relu2", "conv3", "bn3", "add1", "relu3",
                     "gap", "flatten", "fc", "prob"]
    assert lines[5].split() == ["4", "conv2", "Conv", "[1,24,16,16]", "conv2bn2relu2"]
    assert main(["extract", str(demo["model"]), "--list", "--grep", "BN3", "-f", str(demo["json"])]) == 0
    assert [line.split()[1] for line in capsys.readouterr().out.splitlines()[1:]] == ["conv3", "bn3"]


def test_region_from_device_inputs_reproduces_the_replay(demo, tmp_path, capsys):
    code, folders = run_extract(demo, tmp_path / "out", "--start", "conv2", "--end", "add1")
    assert code == 0 and len(folders) == 1
    folder = folders[0]
    assert re.fullmatch(r"dump_result_\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d", folder.name)
    assert sorted(p.name for p in folder.iterdir()) == ["acl.json", "commands.sh", "device_dump", "dump_data",
                                                         "expected", "export.log", "inputs", "model.onnx"]
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]  # no temporary left
    out = capsys.readouterr().out
    assert "6 layers from conv2 to add1" in out and "dumpcmp compare -l device_dump" in out

    sub = onnx.load(str(folder / "model.onnx"))
    onnx.checker.check_model(sub, full_check=True)
    assert [n.name for n in sub.graph.node] == ["conv2", "bn2", "relu2", "conv3", "bn3", "add1"]
    assert [i.name for i in sub.graph.input] == ["pool1_out"] and [o.name for o in sub.graph.output] == ["add1_out"]
    assert {t.name for t in sub.graph.initializer} >= {"conv2_w", "bn2_scale", "conv3_w", "bn3_var"}

    # the input is the device's pool1 output, decoded by the spec's recipe, in the original dtype
    x = np.load(folder / "inputs" / "pool1_out.npy")
    want = device_output(demo["files"]["pool1"])
    assert x.dtype == np.float32 and x.shape == (1, 24, 16, 16)
    np.testing.assert_array_equal(x, want)
    raw = (folder / "inputs" / "pool1_out.bin").read_bytes()
    np.testing.assert_array_equal(np.frombuffer(raw, np.float16).reshape(x.shape), x.astype(np.float16))

    got = ort.InferenceSession(str(folder / "model.onnx")).run(None, {"pool1_out": x})[0]
    expect = replay(demo["model"], ["conv2", "bn2", "relu2", "conv3", "bn3", "add1"], {"pool1_out": x})["add1_out"]
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)
    gt = np.load(folder / "expected" / "add1_out.npy")
    full = ort.InferenceSession(str(demo["model"])).run(["prob"], {"input": demo["x"]})  # noqa: F841
    np.testing.assert_array_equal(gt, np.load(next(demo["gt"].glob("add1.0.*.npy"))))


def test_dump_files_log_and_acl_json_name_exactly_the_region(demo, tmp_path, capsys):
    code, (folder,) = run_extract(demo, tmp_path / "out", "--start", "conv2", "--end", "add1")
    assert code == 0
    region_ops = ["conv2bn2relu2", "conv3bn3", "add1"]
    files = sorted((folder / "dump_data").iterdir())
    assert sorted(f.name for f in files) == sorted(demo["files"][op].name for op in region_ops)
    for f in files:  # linked or copied, never moved
        assert demo["files"][f.name.split(".")[1]].read_bytes() == f.read_bytes()
    log = (folder / "export.log").read_text()
    layers = re.findall(r"Dump Layer:\[(.*)\]", log)
    assert layers == ["conv2, bn2, relu2", "conv3, bn3", "add1"]
    assert re.findall(r"Output File:(.*)", log) == [demo["files"][op].name for op in region_ops]
    assert re.findall(r"Input File:(.*)", log) == [demo["files"][op].name for op in
                                                  ("pool1", "conv2bn2relu2", "conv3bn3", "pool1")]
    assert re.search(r"Export Layer:(.*)", log).group(1) == "conv2,bn2,relu2,conv3,bn3,add1"
    assert f"Output Dump Path:{folder.absolute() / 'dump_data'}" in log
    import json

    acl = json.loads((folder / "acl.json").read_text())["dump"]
    assert acl["dump_list"] == [{"model_name": "model", "layer": region_ops}]
    capsys.readouterr()
    assert main(["acl-json", "check", str(folder / "acl.json")]) == 0
    assert "valid: 0 errors" in capsys.readouterr().out

    # the sub-model run on the (simulated) device with that acl.json dumps exactly those layers
    sim = simulate(folder / "model.onnx", tmp_path / "sub_dump", acl_json=folder / "acl.json",
                   samples=[{"pool1_out": np.load(folder / "inputs" / "pool1_out.npy")}])
    assert sim.dumped_ops == region_ops and not sim.notes


def test_ground_truth_inputs_give_the_expected_outputs(demo, tmp_path):
    code, (folder,) = run_extract(demo, tmp_path / "out", "--start", "pool1_out", "--end", "relu3",
                                  "--data", "ground-truth", "--bin-dtype", "fp32")
    assert code == 0
    x = np.load(folder / "inputs" / "pool1_out.npy")
    np.testing.assert_array_equal(x, np.load(next(demo["gt"].glob("pool1.0.*.npy"))))
    assert (folder / "inputs" / "pool1_out.bin").read_bytes() == x.astype(np.float32).tobytes()
    from dumpcmp.debug.extract import bin_dtype_of  # integers (shape tensors, indices) keep their own dtype

    assert bin_dtype_of(np.zeros(2, np.int64), np.dtype(np.float16)) == np.int64
    got = ort.InferenceSession(str(folder / "model.onnx")).run(None, {"pool1_out": x})[0]
    np.testing.assert_allclose(got, np.load(folder / "expected" / "relu3_out.npy"), rtol=1e-5, atol=1e-5)


def test_one_layer_and_device_op_names(demo, tmp_path):
    code, (folder,) = run_extract(demo, tmp_path / "one", "--start", "fc", "--end", "fc")
    assert code == 0
    sub = onnx.load(str(folder / "model.onnx"))
    assert [n.op_type for n in sub.graph.node] == ["Gemm"] and [i.name for i in sub.graph.input] == ["flat_out"]
    assert {t.name for t in sub.graph.initializer} == {"fc_w", "fc_b"}
    # a device op name stands for its original layers; two ends give two outputs
    code, (folder,) = run_extract(demo, tmp_path / "dev", "--start", "conv2bn2relu2", "--end", "conv3bn3",
                                  "--end", "relu3")
    assert code == 0
    sub = onnx.load(str(folder / "model.onnx"))
    assert [o.name for o in sub.graph.output] == ["bn3_out", "relu3_out"]  # conv3bn3 holds bn3's output
    assert [n.name for n in sub.graph.node] == ["conv2", "bn2", "relu2", "conv3", "bn3", "add1", "relu3"]


def test_constant_nodes_travel_inside(tmp_path):
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r1"),
             helper.make_node("Constant", [], ["shape"], name="c",
                              value=helper.make_tensor("v", TensorProto.INT64, [2], [1, 12])),
             helper.make_node("Reshape", ["a", "shape"], ["b"], name="reshape"),
             helper.make_node("Sigmoid", ["b"], ["y"], name="sig")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    x = np.random.default_rng(1).standard_normal((1, 3, 2, 2)).astype(np.float32)
    sim = simulate(tmp_path / "m.onnx", tmp_path / "dump", samples=[{"x": x}])
    assert main(["extract", str(tmp_path / "m.onnx"), "--start", "reshape", "--end", "sig", "-l",
                 str(tmp_path / "dump"), "-f", str(sim.json_path), "-o", str(tmp_path / "out")]) == 0
    folder, = (tmp_path / "out").glob("dump_result_*")
    sub = onnx.load(str(folder / "model.onnx"))
    assert [n.op_type for n in sub.graph.node] == ["Constant", "Reshape", "Sigmoid"]
    a = np.load(folder / "inputs" / "a.npy")
    np.testing.assert_array_equal(a, np.maximum(x, 0).astype(np.float16).astype(np.float32))
    got = ort.InferenceSession(str(folder / "model.onnx")).run(None, {"a": a})[0]
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-a.reshape(1, 12))), rtol=1e-6)


@pytest.mark.parametrize("args, message", [
    (["--start", "conv_2", "--end", "add1"], "no layer, tensor or device op named 'conv_2'; closest: conv2"),
    (["--start", "add1", "--end", "conv2"], "end 'conv2' is not reachable from the start 'add1'"),
    (["--start", "bn2", "--end", "relu2"], "'conv2_out' has no data in the device dump"),
    (["--start", "conv2", "--end", "add1", "--data", "ground-truth", "--bin-dtype", "fp99"], "--bin-dtype 'fp99'"),
])
def test_errors_exit_2_and_leave_nothing(demo, tmp_path, capsys, args, message):
    out = tmp_path / "new"
    code, folders = run_extract(demo, out, *args)
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    if "conv2_out" in message:
        assert "pass --data ground-truth" in err  # the ground truth has it


def test_real_network(tmp_path):
    from helpers.realnets import realnet_or_skip

    path = realnet_or_skip("ocr_cls")
    x = np.random.default_rng(0).standard_normal((1, 3, 48, 96)).astype(np.float32)
    sim = simulate(path, tmp_path / "dump", samples=[{"x": x}])
    dump_golden(path, {"x": x}, tmp_path / "gt")
    base = ["extract", str(path), "--start", "Conv@5", "--end", "Relu@4", "-l", str(tmp_path / "dump"), "-f",
            str(sim.json_path), "-r", str(tmp_path / "gt")]
    assert main(base + ["-o", str(tmp_path / "dev")]) == 0
    assert main(base + ["-o", str(tmp_path / "gtd"), "--data", "ground-truth"]) == 0
    (dev,) = (tmp_path / "dev").glob("dump_result_*")
    (gtd,) = (tmp_path / "gtd").glob("dump_result_*")
    sub = onnx.load(str(dev / "model.onnx"))
    onnx.checker.check_model(sub, full_check=True)
    names = [n.name for n in sub.graph.node if n.op_type != "Constant"]  # its BN parameters are Constant nodes
    assert names == ["Conv@5", "BatchNormalization@3", "Conv@6", "BatchNormalization@4", "Relu@3", "Conv@7",
                     "BatchNormalization@5", "Relu@4"]
    (inp,) = [i.name for i in sub.graph.input]
    (outp,) = [o.name for o in sub.graph.output]
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", outp)
    # device inputs: the replay; ground-truth inputs: the expected outputs
    xd = np.load(dev / "inputs" / f"{inp}.npy")
    got = ort.InferenceSession(str(dev / "model.onnx")).run(None, {inp: xd})[0]
    np.testing.assert_allclose(got, replay(path, names, {inp: xd})[outp], rtol=1e-4, atol=1e-4)
    xg = np.load(gtd / "inputs" / f"{inp}.npy")
    got = ort.InferenceSession(str(gtd / "model.onnx")).run(None, {inp: xg})[0]
    np.testing.assert_allclose(got, np.load(gtd / "expected" / f"{stem}.npy"), rtol=1e-4, atol=1e-4)
    assert len(os.listdir(dev / "dump_data")) == 3


def test_interrupted_export_leaves_nothing_and_keeps_the_folder(demo, tmp_path, monkeypatch):
    import dumpcmp.debug.extract.export as ex

    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("user file")

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(ex, "_link", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ex.extract(demo["model"], ["conv2"], ["add1"], dump=demo["dump"], graph_json=demo["json"], out=out)
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    assert all(p.exists() for p in demo["files"].values())  # the dumps were never moved


def test_real_network_whole(tmp_path):
    # from the model's input to its output: shape inference leaves the output without a shape (a Reshape it cannot
    # follow); the sub-model still passes the checker and gives the ground truth on the ground-truth input
    from helpers.realnets import realnet_or_skip

    path = realnet_or_skip("ocr_cls")
    x = np.random.default_rng(1).standard_normal((1, 3, 48, 96)).astype(np.float32)
    sim = simulate(path, tmp_path / "dump", samples=[{"x": x}])
    dump_golden(path, {"x": x}, tmp_path / "gt")
    out = onnx.load(str(path)).graph.output[0].name
    assert main(["extract", str(path), "--start", "x", "--end", out, "-l", str(tmp_path / "dump"), "-f",
                 str(sim.json_path), "-r", str(tmp_path / "gt"), "--data", "ground-truth", "-o",
                 str(tmp_path / "o")]) == 0
    (folder,) = (tmp_path / "o").glob("dump_result_*")
    sub = onnx.load(str(folder / "model.onnx"))
    onnx.checker.check_model(sub, full_check=True)
    np.testing.assert_array_equal(np.load(folder / "inputs" / "x.npy"), x)
    got = ort.InferenceSession(str(folder / "model.onnx")).run(None, {"x": x})[0]
    want = ort.InferenceSession(str(path)).run([out], {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    (expected,) = (folder / "expected").iterdir()
    np.testing.assert_allclose(np.load(expected), want, rtol=1e-5, atol=1e-6)


def test_list_takes_shapes_the_model_leaves_open_from_the_graph_json(tmp_path, capsys):
    from helpers.realnets import realnet_or_skip

    path = realnet_or_skip("ocr_cls")  # free batch and width: shape inference leaves the Conv outputs open
    x = np.random.default_rng(0).standard_normal((1, 3, 48, 96)).astype(np.float32)
    sim = simulate(path, tmp_path / "dump", samples=[{"x": x}])
    dump_golden(path, {"x": x}, tmp_path / "gt")
    assert main(["extract", str(path), "--list", "--grep", "@3", "-f", str(sim.json_path)]) == 0
    rows = {line.split()[1]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    bn = rows["BatchNormalization@3"]  # the output the fused device op holds: its shape from the graph JSON
    want = np.load(next((tmp_path / "gt").glob("BatchNormalization@3.0.*.npy"))).shape
    assert bn[3] == "[" + ",".join(map(str, want)) + "]" and bn[4] == "Conv@5BatchNormalization@3"
    assert rows["Conv@5"][3] == "?"  # fused away: no device op holds it
