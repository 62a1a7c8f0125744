"""debug.region and locate.feeds: the region of every device op, cut out and run, reproduces the ground truth;
the device's inputs decode to the original tensors' shape and dtype."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from helpers.locate_nets import build_net, net_input  # noqa: E402

from dumpcmp.comparison.compare import paired_runs  # noqa: E402
from dumpcmp.graph.graph_json import load_graph  # noqa: E402
from dumpcmp.debug.locate import OriginalModel, RegionError, cut_region, device_feeds, region_of, to_onnx  # noqa: E402
from dumpcmp.dumps.scan import scan  # noqa: E402


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from dumpcmp.onnx.golden import dump_golden
    from dumpcmp.device.simulate import simulate

    d = tmp_path_factory.mktemp("regions")
    model = build_net(d / "net.onnx")
    x = net_input()
    dump_golden(model, {"x": x}, d / "gt")
    sim = simulate(model, d / "dump", precision="fp16", samples=[{"x": x}], dump_mode="all")
    gt = {e.key: e for e in scan(d / "gt").ground_truth}
    return {"model": model, "dir": d, "json": sim.json_path, "gt": gt, "sim": sim}


def _gt(net: dict, tensor: str, om: OriginalModel) -> np.ndarray:
    op = om.producer.get(tensor, tensor)
    index = list(om.nodes[op].output).index(tensor) if op in om.nodes else 0
    return np.asarray(net["gt"][f"{op}.{index}"].open())


def test_regions_of_fused_plain_inserted_and_quantized_ops(net: dict) -> None:
    om = OriginalModel.load(net["model"])
    graph = load_graph(net["json"])
    fused = region_of(om, graph, "b0a_convb0a_bn")
    assert fused.nodes == ("b0a_conv", "b0a_bn") and fused.inputs == ("stem_relu",) and fused.outputs == ("b0a_bn",)
    assert region_of(om, graph, "stem_convstem_bnstem_relu").nodes == ("stem_conv", "stem_bn", "stem_relu")
    silu = region_of(om, graph, "b0_silu")
    assert silu.nodes == ("b0_silu",) and set(silu.inputs) == {"b0a_bn", "b0_sig"}
    assert region_of(om, graph, "att_qk").inputs == ("q", "kt")
    reshape = region_of(om, graph, "tok_reshape")  # the shape is an initializer: it travels inside
    assert reshape.inputs == ("b1_add",)
    cast = region_of(om, graph, "trans_Cast_0")
    assert cast.identity and cast.inputs == cast.outputs == ("x",)
    with pytest.raises(RegionError, match="no such|not an op"):
        region_of(om, graph, "no_such_op")
    with pytest.raises(RegionError, match="not among"):
        cut_region(om, ["stem_relu"], ["b0_silu"], allowed=["b0_silu"])


def test_every_cut_region_reproduces_the_ground_truth_in_onnxruntime(net: dict) -> None:
    import onnxruntime as ort

    om = OriginalModel.load(net["model"])
    graph = load_graph(net["json"])
    checked = 0
    for op in graph.ops:
        if op.type in ("Data", "Const", "NetOutput"):
            continue
        region = region_of(om, graph, op.name)
        if region.identity:
            continue
        sub = to_onnx(om, region)
        assert {i.name for i in sub.graph.input} == set(region.inputs)
        session = ort.InferenceSession(sub.SerializeToString(), providers=["CPUExecutionProvider"])
        got = session.run(list(region.outputs), {t: _gt(net, t, om) for t in region.inputs})
        for t, array in zip(region.outputs, got):
            np.testing.assert_allclose(array, _gt(net, t, om), rtol=1e-5, atol=1e-5)
        checked += 1
    assert checked >= 20


def test_device_feeds_are_the_device_inputs_in_the_original_layout_shape_and_dtype(net: dict) -> None:
    om = OriginalModel.load(net["model"])
    run = paired_runs(net["dir"] / "dump", net["dir"] / "gt", fusion_json=net["json"])[0]
    ops = dict.fromkeys(p.npu_op for p in run.pairs if p.npu_op)
    seen_layouts = set()
    for op in ops:
        pairs = [p for p in run.pairs if p.npu_op == op]
        feeds = device_feeds(om, pairs)
        for p in pairs:
            if p.kind == "input" and p.npu_ref is not None:
                seen_layouts.add(p.npu_ref.dump.inputs[p.index].format)
        for tensor, array in feeds.items():
            truth = _gt(net, tensor, om)
            assert array.shape == truth.shape and array.dtype == truth.dtype
            # the device holds fp16 values of the same tensor
            np.testing.assert_allclose(array, truth, rtol=2e-2, atol=2e-2 * float(np.abs(truth).max()))
        assert not any(om.is_weight(t) for t in feeds)
    assert {"NC1HWC0", "FRACTAL_NZ"} <= seen_layouts


def test_a_region_onnxruntime_cannot_run_fails_alone_and_control_flow_is_refused(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    from dumpcmp.debug.region import Region
    from dumpcmp.debug.locate.replay import Job, run_jobs

    then = helper.make_graph([helper.make_node("Identity", ["a"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("MyOp", ["a"], ["b"], name="custom", domain="my.custom"),
        helper.make_node("Neg", ["a"], ["c"], name="neg"),
        helper.make_node("If", ["cond"], ["d"], name="branch", then_branch=then, else_branch=then),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                                           helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("c", TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("d", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("my.custom", 1)])
    om = OriginalModel(model)
    a = np.array([1.0, -2.0], np.float32)
    good = Job(cut_region(om, ["a"], ["c"]), {"a": a})
    bad = Job(cut_region(om, ["a"], ["b"]), {"a": a})
    identity = Job(Region((), ("a",), ("a",)), {"a": a})
    run_jobs(om, [good, bad, identity])
    np.testing.assert_array_equal(good.outputs["c"], -a)
    assert good.error is None and identity.outputs["a"] is a
    assert bad.error is not None and "onnxruntime cannot run the region" in bad.error
    with pytest.raises(RegionError, match="control flow"):
        cut_region(om, ["cond"], ["d"])
