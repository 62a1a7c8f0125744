"""A small ONNX network for the SigmaStar simulation tests (#39), written with onnx.helper into the caller's folder."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build_net(path, opset=13):
    """x (1,3,6,6) -> Conv -> c -> Mul 0.7 -> m -> Relu -> r -> Add(r, m) -> a -> Sigmoid -> y (plus a Shape)."""
    rng = np.random.default_rng(5)
    w = numpy_helper.from_array(rng.normal(size=(4, 3, 3, 3)).astype(np.float32), "w")
    k = numpy_helper.from_array(np.array(0.7, np.float32), "k")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["c", "k"], ["m"], name="mul"),
             helper.make_node("Relu", ["m"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "m"], ["a"], name="add"),
             helper.make_node("Sigmoid", ["a"], ["y"], name="sig"),
             helper.make_node("Shape", ["y"], ["s"], name="shape")]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6]),
                               helper.make_tensor_value_info("s", TensorProto.INT64, [4])], [w, k])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, path)
    return path
