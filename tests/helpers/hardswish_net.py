"""A small detector-like backbone whose activations are hardswish written out as ONNX exporters write it
(`x * Clip(x + 3, 0, 6) / 6`: Add of a constant, Clip, Mul, Div), with depthwise and pointwise convolutions
(onnx.helper, fixed seed). Between two tensors carrying an error, the Add and Clip outputs stay near cosine 1: the
offset and the saturation hide it, as in PP-PicoDet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def build_hardswish_net(path: Path, *, blocks: int = 4, channels: int = 8, size: int = 16, seed: int = 5) -> Path:
    """stem Conv -> hardswish -> `blocks` x [depthwise Conv `dw{b}` -> hardswish -> pointwise Conv `pw{b}` ->
    hardswish] -> GlobalAveragePool -> Flatten -> Gemm `fc`. Input `x` (1, 3, size, size), output `logits` (1, 10).
    The weights of depthwise conv b are `dw{b}_w`."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    def conv(name: str, x: str, cin: int, cout: int, k: int, group: int = 1) -> str:
        w = rng.standard_normal((cout, cin // group, k, k)) * 0.8 / np.sqrt(cin // group * k * k)
        b = rng.normal(0, 0.05, cout)
        nodes.append(helper.make_node("Conv", [x, const(f"{name}_w", w), const(f"{name}_b", b)], [f"{name}_out"],
                                      name=name, pads=[k // 2] * 4, group=group))
        return f"{name}_out"

    def hardswish(name: str, x: str) -> str:
        nodes.append(helper.make_node("Add", [x, "three"], [f"{name}_add"], name=f"{name}_add"))
        nodes.append(helper.make_node("Clip", [f"{name}_add", "zero", "six"], [f"{name}_clip"], name=f"{name}_clip"))
        nodes.append(helper.make_node("Mul", [x, f"{name}_clip"], [f"{name}_mul"], name=f"{name}_mul"))
        nodes.append(helper.make_node("Div", [f"{name}_mul", "six"], [f"{name}_div"], name=f"{name}_div"))
        return f"{name}_div"

    const("three", np.array(3.0))
    const("zero", np.array(0.0))
    const("six", np.array(6.0))
    c = channels
    h = hardswish("stem_hs", conv("stem", "x", 3, c, 3))
    for b in range(blocks):
        h = hardswish(f"dw{b}_hs", conv(f"dw{b}", h, c, c, 3, group=c))
        h = hardswish(f"pw{b}_hs", conv(f"pw{b}", h, c, c, 1))
    nodes.append(helper.make_node("GlobalAveragePool", [h], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"))
    nodes.append(helper.make_node("Gemm", ["flat", const("fc_w", rng.standard_normal((10, c)) / np.sqrt(c)),
                                           const("fc_b", np.zeros(10))], ["logits"], name="fc", transB=1))
    graph = helper.make_graph(nodes, "hardswish_net",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return Path(path)
