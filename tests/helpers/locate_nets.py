"""Generated ONNX networks of real structure for the locate tests and benchmark (onnx.helper, fixed seeds):
Conv+BN+ReLU stems, residual blocks, SiLU (Sigmoid*Mul), an attention-like MatMul/Softmax head, a Gemm classifier.
`plant_fault` writes a copy with one node's weights perturbed: the "device" of a planted-fault test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def build_net(path: Path, *, blocks: int = 2, channels: int = 16, size: int = 8, attention: bool = True,
              seed: int = 7) -> Path:
    """stem Conv+BN+ReLU -> `blocks` x [Conv+BN -> Sigmoid*Mul (SiLU) -> Conv+BN+ReLU -> Add residual] ->
    (attention: tokens -> q,k,v MatMul -> q.k^T MatMul -> Softmax -> .v MatMul -> Add) -> GAP -> Flatten -> Gemm
    -> Softmax. Input `x` (1, 3, size, size), output `prob` (1, 10)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, name))
        return name

    def weight(name: str, shape: tuple[int, ...], gain: float = 1.4) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        return const(name, (rng.standard_normal(shape) * gain / np.sqrt(fan_in)).astype(np.float32))

    def conv_bn(name: str, x: str, cin: int, cout: int, relu: bool, gain: float = 1.4) -> str:
        nodes.append(helper.make_node("Conv", [x, weight(f"{name}_w", (cout, cin, 3, 3), gain)], [f"{name}_c"],
                                      name=f"{name}_conv", pads=[1, 1, 1, 1]))
        bn = [const(f"{name}_{k}", v.astype(np.float32)) for k, v in
              (("scale", rng.uniform(0.8, 1.2, cout)), ("bias", rng.normal(0, 0.1, cout)),
               ("mean", rng.normal(0, 0.1, cout)), ("var", rng.uniform(0.5, 1.5, cout)))]
        nodes.append(helper.make_node("BatchNormalization", [f"{name}_c", *bn], [f"{name}_bn"], name=f"{name}_bn"))
        if not relu:
            return f"{name}_bn"
        nodes.append(helper.make_node("Relu", [f"{name}_bn"], [f"{name}_relu"], name=f"{name}_relu"))
        return f"{name}_relu"

    c = channels
    x = conv_bn("stem", "x", 3, c, True)
    for b in range(blocks):
        h = conv_bn(f"b{b}a", x, c, c, False)
        nodes.append(helper.make_node("Sigmoid", [h], [f"b{b}_sig"], name=f"b{b}_sig"))
        nodes.append(helper.make_node("Mul", [h, f"b{b}_sig"], [f"b{b}_silu"], name=f"b{b}_silu"))
        # a small residual branch, as trained deep residual networks have: activations stay in fp16's range
        h = conv_bn(f"b{b}b", f"b{b}_silu", c, c, True, gain=0.05 if blocks > 8 else 1.4)
        nodes.append(helper.make_node("Add", [h, x], [f"b{b}_add"], name=f"b{b}_add"))
        x = f"b{b}_add"
    if attention:
        t = size * size
        nodes.append(helper.make_node("Reshape", [x, const("tok_shape", np.array([1, c, t], np.int64))],
                                      ["tok_r"], name="tok_reshape"))
        nodes.append(helper.make_node("Transpose", ["tok_r"], ["tok"], name="tok_transpose", perm=[0, 2, 1]))
        for k in "qkv":
            nodes.append(helper.make_node("MatMul", ["tok", weight(f"w{k}", (c, c), 1.0)], [k], name=f"att_{k}"))
        nodes.append(helper.make_node("Transpose", ["k"], ["kt"], name="att_kt", perm=[0, 2, 1]))
        nodes.append(helper.make_node("MatMul", ["q", "kt"], ["qk"], name="att_qk"))
        nodes.append(helper.make_node("Mul", ["qk", const("att_scale", np.array(c ** -0.5, np.float32))], ["qks"],
                                      name="att_scale_mul"))
        nodes.append(helper.make_node("Softmax", ["qks"], ["att"], name="att_softmax", axis=-1))
        nodes.append(helper.make_node("MatMul", ["att", "v"], ["av"], name="att_av"))
        nodes.append(helper.make_node("Add", ["av", "tok"], ["att_out"], name="att_add"))
        nodes.append(helper.make_node("Transpose", ["att_out"], ["att_t"], name="att_back", perm=[0, 2, 1]))
        nodes.append(helper.make_node("Reshape", ["att_t", const("map_shape", np.array([1, c, size, size], np.int64))],
                                      ["att_map"], name="att_map"))
        x = "att_map"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"))
    fc_inputs = ["flat", weight("fc_w", (10, c), 3.0), const("fc_b", np.zeros(10, np.float32))]
    nodes.append(helper.make_node("Gemm", fc_inputs, ["logits"], name="fc", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["prob"], name="prob", axis=1))
    graph = helper.make_graph(nodes, "locate_net",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def plant_fault(src: Path, dst: Path, weight: str, *, scale: float = 0.0, noise: float = 0.5, seed: int = 1) -> Path:
    """A copy of the model whose initializer `weight` is multiplied by (1 + scale) and gets relative Gaussian
    noise of `noise` times its RMS: the faulty device."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(src)
    rng = np.random.default_rng(seed)
    # the weight is an initializer, or the value of a Constant node (older exporters)
    tensors = [t for t in model.graph.initializer if t.name == weight] + \
        [a.t for n in model.graph.node if n.op_type == "Constant" and list(n.output) == [weight]
         for a in n.attribute if a.name == "value"]
    if not tensors:
        raise KeyError(weight)
    t = tensors[0]
    w = numpy_helper.to_array(t).astype(np.float32)
    rms = float(np.sqrt(np.mean(w.astype(np.float64) ** 2)))
    w = w * (1 + scale) + rng.standard_normal(w.shape).astype(np.float32) * noise * rms
    t.CopyFrom(numpy_helper.from_array(w.astype(np.float32), t.name))
    onnx.save(model, dst)
    return dst


def net_input(size: int = 8, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 3, size, size)).astype(np.float32)


def simulated_net(d: Path, precision: str, *, attention: bool = True, weight: str | None = None,
                  dump_mode: str = "all") -> dict:
    """`build_net` in `d` with its ground truth (`dumpcmp golden`) and a `dumpcmp simulate` dump of it (with `weight`
    planted as a fault when given): {"model", "dump", "gt", "json", "dir"}."""
    from dumpcmp.device.simulate import simulate
    from dumpcmp.onnx.golden import dump_golden

    d.mkdir(parents=True, exist_ok=True)
    model = build_net(d / "net.onnx", attention=attention)
    device = plant_fault(model, d / "faulty.onnx", weight) if weight else model
    x = net_input()
    dump_golden(model, {"x": x}, d / "gt")
    sim = simulate(device, d / "dump", precision=precision, samples=[{"x": x}], dump_mode=dump_mode,
                   model_name="net")
    return {"model": model, "dump": d / "dump", "gt": d / "gt", "json": sim.json_path, "dir": d}
