"""bisect where its assumption (an error persists downstream) fails, with `dumpcmp simulate` as the device and a
planted fault: hardswish blocks (`x * Clip(x + 3, 0, 6) / 6`) keep their Add and Clip near cosine 1 between bad
tensors, so those layers are not tested and the fault's depthwise conv is named, as compare and locate name it; a
branch that joins late (execution order is not a path) is caught by the confirmation round."""

from __future__ import annotations

import shlex
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.debug.bisect import bisect  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402

SIMULATE = f"{shlex.quote(sys.executable)} -m dumpcmp simulate {{model}} --precision fp16 -i x={{x}} " \
           "--acl-json {acl_json} -o {dump}"


def _setup(base, model, weight, noise):
    from helpers.locate_nets import plant_fault

    size = onnx.load(str(model)).graph.input[0].type.tensor_type.shape.dim[-1].dim_value
    x = np.random.default_rng(3).standard_normal((1, 3, size, size)).astype(np.float32)
    np.save(base / "x.npy", x)
    dump_golden(model, {"x": x}, base / "gt")
    (base / "device").mkdir()
    faulty = plant_fault(model, base / "device" / model.name, weight, noise=noise)
    return faulty, SIMULATE.replace("{x}", shlex.quote(str(base / "x.npy")))


def test_hardswish_blocks_name_the_faulty_depthwise_conv(tmp_path):
    # was: dw2_hs_mul, reached through dw2_hs_add and dw2_hs_clip at cosine 0.99976 downstream of the fault
    from helpers.hardswish_net import build_hardswish_net

    model = build_hardswish_net(tmp_path / "net.onnx")
    faulty, command = _setup(tmp_path, model, "dw2_w", 3.0)
    lines: list[str] = []
    r = bisect(model, command, tmp_path / "gt", tmp_path / "b", device_model=faulty, echo=lines.append)
    assert r.layer == "dw2" and r.previous == "pw1_hs_div"
    assert not any(x.endswith(("_add", "_clip")) for x in r.candidates)
    assert set(r.left_out) == {f"{b}_hs_{k}" for b in ["stem", "dw0", "pw0", "dw1", "pw1", "dw2", "pw2", "dw3", "pw3"]
                               for k in ("add", "clip")}
    assert r.left_out["dw2_hs_add"] == "Add of a constant offsets" and r.left_out["dw2_hs_clip"] == "Clip saturates"
    assert r.confirmation is not None and r.confirmation.startswith("confirmed") and "pw1_hs_div" in r.confirmation
    assert "the error starts at dw2 (Conv2D)" in (r.locate or "")
    assert any("18 of 48 layers are not tested" in line for line in lines)


def _branch_net(path, size=8, c=4):
    """x -> c0 -> {side: conv `side` (the fault) ; main: m1 .. m8 } -> Add `join` -> GAP -> Flatten -> Gemm `fc`;
    `side` runs first, so execution order puts the healthy main chain between the fault and the join."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)
    inits, nodes = [], []

    def conv(name, x):
        w = (rng.standard_normal((c, c if x != "x" else 3, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"{name}_w"))
        nodes.append(helper.make_node("Conv", [x, f"{name}_w"], [f"{name}_c"], name=name, pads=[1] * 4))
        nodes.append(helper.make_node("Relu", [f"{name}_c"], [f"{name}_r"], name=f"{name}_relu"))
        return f"{name}_r"

    h = conv("c0", "x")
    side = conv("side", h)
    for k in range(1, 9):
        h = conv(f"m{k}", h)
    nodes.append(helper.make_node("Add", [h, side], ["join"], name="join"))
    nodes.append(helper.make_node("GlobalAveragePool", ["join"], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"))
    inits.append(numpy_helper.from_array((rng.standard_normal((10, c)) / 2).astype(np.float32), "fc_w"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w"], ["logits"], name="fc", transB=1))
    graph = helper.make_graph(nodes, "branch",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_a_late_join_is_caught_by_the_confirmation_round(tmp_path):
    model = _branch_net(tmp_path / "branch.onnx")
    faulty, command = _setup(tmp_path, model, "side_w", 3.0)
    lines: list[str] = []
    r = bisect(model, command, tmp_path / "gt", tmp_path / "b", device_model=faulty, echo=lines.append,
               with_locate=False)
    assert r.layer is not None and r.layer.startswith("side"), lines
    assert any(line.startswith("not confirmed") and "does not persist downstream" in line for line in lines), lines
    assert r.confirmation is not None and r.confirmation.startswith("confirmed")
