"""`simulate` runs models whose lower-precision rewrite used to fail where `dumpcmp golden` runs the original:
names the int8 quantizer derives (`{x}_quantized`, `{x}_scale`, `{x}_QuantizeLinear`) that the model holds already,
a Resize in its opset-13 form (empty roi and scales, sizes given) that the fp16 Casts made look like both scales and
sizes; and a rewrite onnxruntime refuses is reported as dumpcmp's own, naming the precision and what to do."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime.quantization")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from helpers import layout_reference as ref  # noqa: E402
from dumpcmp.cli import main  # noqa: E402
from dumpcmp.device.simulate import run as simulate_run  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.dumps.dump import open_dump  # noqa: E402
from dumpcmp.dumps.naming import parse_name  # noqa: E402

X = np.random.default_rng(3).standard_normal((1, 2, 8, 8)).astype(np.float32)


def save(path: Path, nodes, inits, opset=13, out_shape=(1, 2, 8, 8)) -> Path:
    import onnx

    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def dumped(result) -> dict[str, np.ndarray]:
    """op name -> its first output, decoded to the framework layout."""
    out = {}
    folder = result.sample_dirs[0]
    for f in sorted(os.listdir(folder)):
        t = open_dump(folder / f).outputs[0]
        a = np.asarray(t.array())
        if t.format == "NC1HWC0":
            a = ref.recipe_decode_nc1hwc0(a, t.original_shape[1])
        out[parse_name(f).op_name] = a.reshape(t.original_shape).astype(np.float32)
    return out


def weight(name: str) -> object:
    return numpy_helper.from_array(np.random.default_rng(1).standard_normal((2, 2, 3, 3)).astype(np.float32), name)


def conv(src: str, dst: str, name: str = "conv") -> object:
    return helper.make_node("Conv", [src, "w"], [dst], name=name, pads=[1, 1, 1, 1])


# a model holding a name the quantizer derives for its own tensors or nodes
COLLIDING = {
    "weight_quantized": [conv("x", "a"), helper.make_node("Relu", ["x"], ["w_quantized"], name="relu"),
                         helper.make_node("Add", ["a", "w_quantized"], ["y"], name="add")],
    "input_scale": [conv("x", "a"), helper.make_node("Relu", ["x"], ["x_scale"], name="relu"),
                    helper.make_node("Add", ["a", "x_scale"], ["y"], name="add")],
    "quantize_node_name": [conv("x", "a"), helper.make_node("Relu", ["x"], ["r"], name="x_QuantizeLinear"),
                           helper.make_node("Add", ["a", "r"], ["y"], name="add")],
    "linear_outputs": [conv("x", "a"), helper.make_node("Relu", ["x"], ["x_QuantizeLinear_Output"], name="relu"),
                       helper.make_node("Relu", ["x"], ["w_DequantizeLinear_Output"], name="relu2"),
                       helper.make_node("Add", ["a", "x_QuantizeLinear_Output"], ["b"], name="add"),
                       helper.make_node("Add", ["b", "w_DequantizeLinear_Output"], ["y"], name="add2")],
}


@pytest.mark.parametrize("case", sorted(COLLIDING))
def test_int8_runs_a_model_holding_the_quantizers_own_names(tmp_path, case):
    model = save(tmp_path / "m.onnx", COLLIDING[case], [weight("w")])
    result = simulate(model, tmp_path / "out", precision="int8", samples=[{"x": X}], dump_mode="output")
    ops = dumped(result)
    relu = np.maximum(X, 0)
    step = float(np.abs(X).max()) / 127  # the Relu may read x through its int8 quantize/dequantize pair
    relu_name = next(n.name for n in COLLIDING[case] if n.op_type == "Relu")
    types = {op.name: op.type for op in result.graph.ops}
    assert types[relu_name] == "Relu"  # the model's own Relu keeps its name and computes its own value
    np.testing.assert_allclose(ops[relu_name], relu, atol=step)
    assert "AscendQuant" in types.values() and types["conv"] == "Conv2D"


def test_int8_with_a_weight_shared_by_two_convs(tmp_path):
    model = save(tmp_path / "m.onnx", [conv("x", "a", "c1"), conv("a", "y", "c2")], [weight("w")])
    result = simulate(model, tmp_path / "out", precision="int8", samples=[{"x": X}])
    assert {"c1", "c2"} <= set(dumped(result))


def test_int8_with_a_bias_shared_by_two_convs_and_a_tensor_named_like_its_copy(tmp_path):
    # the quantizer copies a bias two ops share as `{bias}{n}`, n from 0 (the audio CNN of basic-pitch's nmp.onnx:
    # "Duplicate definition of name"); here `b0` is already the model's Relu output
    bias = numpy_helper.from_array(np.array([0.5, -0.5], np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["a"], name="c1", pads=[1] * 4),
             helper.make_node("Relu", ["a"], ["b0"], name="relu"),
             helper.make_node("Conv", ["b0", "w", "b"], ["y"], name="c2", pads=[1] * 4)]
    model = save(tmp_path / "m.onnx", nodes, [weight("w"), bias])
    result = simulate(model, tmp_path / "out", precision="int8", samples=[{"x": X}])
    originals = {o for op in result.graph.ops for o in (op.originals or [])}
    assert {"c1", "relu", "c2"} <= originals
    ops = dumped(result)
    assert "c2" in ops and np.isfinite(ops["c2"]).all() and ops["c2"].shape == X.shape


def resize_model(path: Path, opset: int, roi: str) -> Path:
    empty = numpy_helper.from_array(np.zeros(0, np.float32))
    nodes = [helper.make_node("Constant", [], ["scales"], value=empty),
             helper.make_node("Resize", ["x", roi, "scales", "sizes"], ["y"], name="resize", mode="nearest")]
    if roi:
        nodes.insert(0, helper.make_node("Constant", [], [roi], value=empty))
    return save(path, nodes, [numpy_helper.from_array(np.array([1, 2, 16, 16], np.int64), "sizes")], opset,
                (1, 2, 16, 16))


@pytest.mark.parametrize("precision", ["fp16", "int8"])
@pytest.mark.parametrize("opset,roi", [(13, "roi"), (13, ""), (11, "roi")])
def test_resize_with_empty_scales_and_sizes(tmp_path, precision, opset, roi):
    model = resize_model(tmp_path / "m.onnx", opset, roi)
    result = simulate(model, tmp_path / "out", precision=precision, samples=[{"x": X}])
    expected = X.astype(np.float16).astype(np.float32).repeat(2, axis=2).repeat(2, axis=3)
    np.testing.assert_array_equal(dumped(result)["resize"], expected)


def test_a_rewrite_onnxruntime_refuses_is_reported_as_dumpcmps(tmp_path, monkeypatch, capsys):
    model = save(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"], name="relu")], [])
    real = simulate_run.lower_fp16

    def broken(*args, **kwargs):
        lowered = real(*args, **kwargs)
        lowered.model.graph.node[-1].op_type = "NoSuchOp"  # what a faulty rewrite would leave
        return lowered

    monkeypatch.setattr(simulate_run, "lower_fp16", broken)
    code = main(["simulate", str(model), "--seed", "1", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "dumpcmp's fp16 rewrite" in err and "dumpcmp bug" in err and "--precision int8" in err
    assert not (tmp_path / "out").exists()


def test_a_rewrite_onnxruntime_cannot_run_is_reported_as_dumpcmps(tmp_path, monkeypatch, capsys):
    from onnxruntime.capi.onnxruntime_pybind11_state import RuntimeException

    from dumpcmp.errors import DumpcmpError
    from dumpcmp.onnx.runner import Runner

    model = save(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"], name="relu")], [])

    def failing(self, session, names, feeds):  # what a rewrite failing at run time gives (the original runs)
        try:
            raise RuntimeException("Non-zero status code returned while running Cast node")
        except RuntimeException as error:
            raise DumpcmpError(f"{self.model_path}: onnxruntime failed to run the model: {error}") from error

    monkeypatch.setattr(Runner, "run", failing)
    code = main(["simulate", str(model), "--precision", "int8", "--seed", "1", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "dumpcmp's int8 rewrite" in err and "runs the original" in err and "--precision fp16" in err
    assert not (tmp_path / "out").exists()


def test_a_model_failing_on_its_own_inputs_keeps_the_models_error(tmp_path, capsys):
    import onnx

    graph = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([2, -1], np.int64), "shape")])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    np.save(tmp_path / "x.npy", np.ones(3, np.float32))  # 3 values cannot be 2 rows: the model's own failure
    code = main(["simulate", str(path), "-i", f"x={tmp_path / 'x.npy'}", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "onnxruntime failed to run the model" in err and "dumpcmp bug" not in err
