"""`dumpcmp extract` on an opset-9/IR-3 model (its weights listed among the graph inputs, as such exports keep them)
and with the region's input written by an original ONNX Cast: the sub-model keeps the original's IR version and
passes onnx.checker, and `--data device` takes the input from the dumped Cast op (the pairing walks back past every
Cast, as the original tool does, so no pair names the Cast's own output)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from helpers import layout_reference as ref  # noqa: E402
from dumpcmp.cli import main  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.dumps.dump import open_dump  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402


def build(path: Path, ir_version: int, opset: int) -> Path:
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (4, 3, 3, 3)), ("w2", (4, 4, 3, 3)))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Cast", ["r1"], ["k1"], name="cast1", to=TensorProto.FLOAT),
             helper.make_node("Conv", ["k1", "w2"], ["c2"], name="conv2", pads=[1] * 4),
             helper.make_node("Relu", ["c2"], ["y"], name="relu2")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])]
    if ir_version < 4:  # weights are graph inputs too
        inputs += [helper.make_tensor_value_info(t.name, TensorProto.FLOAT, list(t.dims)) for t in weights]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                                 [1, 4, 8, 8])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module", params=[(3, 9), (8, 13)], ids=["ir3-opset9", "ir8-opset13"])
def net(request, tmp_path_factory):
    base = tmp_path_factory.mktemp("old")
    model = build(base / "net.onnx", *request.param)
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    sim = simulate(model, base / "dump", samples=[{"x": x}])
    dump_golden(model, {"x": x}, base / "gt")
    cast = next(p for p in sim.files if p.name.startswith("Cast.cast1."))
    return {"model": model, "dump": base / "dump", "json": sim.json_path, "gt": base / "gt", "x": x,
            "ir": request.param[0], "cast": cast}


def run(net, out: Path, *args: str) -> Path:
    code = main(["extract", str(net["model"]), *args, "-l", str(net["dump"]), "-f", str(net["json"]),
                 "-r", str(net["gt"]), "-o", str(out)])
    assert code == 0
    (folder,) = sorted(out.glob("dump_result_*"))
    return folder


@pytest.mark.parametrize("data", ["device", "ground-truth"])
def test_region_after_an_original_cast(net, tmp_path, data):
    folder = run(net, tmp_path / "out", "--start", "conv2", "--end", "relu2", "--data", data)
    sub = onnx.load(str(folder / "model.onnx"))
    onnx.checker.check_model(sub, full_check=True)
    assert sub.ir_version == net["ir"]
    data_inputs = [vi.name for vi in sub.graph.input if vi.name not in {t.name for t in sub.graph.initializer}]
    assert data_inputs == ["k1"] and [n.name for n in sub.graph.node] == ["conv2", "relu2"]
    k1 = np.load(folder / "inputs" / "k1.npy")
    if data == "device":  # the dumped Cast's own output, decoded by the spec's recipe
        t = open_dump(net["cast"]).outputs[0]
        want = ref.recipe_decode_nc1hwc0(np.asarray(t.array()), t.original_shape[1]).astype(np.float32)
        np.testing.assert_array_equal(k1, want)
    else:
        np.testing.assert_array_equal(k1, np.load(next(net["gt"].glob("cast1.0.*.npy"))))
    got = ort.InferenceSession(str(folder / "model.onnx")).run(None, {"k1": k1})[0]
    w2 = numpy_helper.to_array(next(t for t in onnx.load(str(net["model"])).graph.initializer if t.name == "w2"))
    one = helper.make_model(helper.make_graph(
        [helper.make_node("Conv", ["k", "w"], ["c"], pads=[1] * 4), helper.make_node("Relu", ["c"], ["y"])], "ref",
        [helper.make_tensor_value_info("k", TensorProto.FLOAT, list(k1.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w2, "w")]),
        opset_imports=[helper.make_opsetid("", 13)])
    expect = ort.InferenceSession(one.SerializeToString()).run(None, {"k": k1})[0]
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)


def test_whole_network_of_an_ir3_model(net, tmp_path):
    folder = run(net, tmp_path / "out", "--start", "conv1", "--end", "relu2")
    sub = onnx.load(str(folder / "model.onnx"))
    onnx.checker.check_model(sub, full_check=True)
    got = ort.InferenceSession(str(folder / "model.onnx")).run(None, {"x": np.load(folder / "inputs" / "x.npy")})[0]
    full = ort.InferenceSession(str(net["model"])).run(None, {"x": np.load(folder / "inputs" / "x.npy")})[0]
    np.testing.assert_array_equal(got, full)


def test_input_dumps_give_the_cast_output_through_its_consumer(net, tmp_path):
    # dump_mode input: no op's output is dumped; the Cast's output is the fused conv2relu2's input 0
    dump = tmp_path / "dump"
    sim = simulate(net["model"], dump, samples=[{"x": net["x"]}], dump_mode="input")
    consumer = next(p for p in sim.files if p.name.startswith("Conv2D.conv2relu2."))
    code = main(["extract", str(net["model"]), "--start", "conv2", "--end", "relu2", "-l", str(dump), "-f",
                 str(sim.json_path), "-o", str(tmp_path / "out")])
    assert code == 0
    (folder,) = sorted((tmp_path / "out").glob("dump_result_*"))
    t = open_dump(consumer).inputs[0]
    want = ref.recipe_decode_nc1hwc0(np.asarray(t.array()), t.original_shape[1]).astype(np.float32)
    np.testing.assert_array_equal(np.load(folder / "inputs" / "k1.npy"), want)
    assert "Conv2D.conv2relu2." in (folder / "export.log").read_text()
