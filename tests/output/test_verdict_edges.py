"""#34 "Verdicts that point elsewhere": the largest drop and the single-layer/drift advice follow producer -> consumer
edges (the graph JSON's inputs), never execution order across branches, and locate's verdict decides single layer
vs drift when it ran. Small two-branch ONNX models: `golden` on the healthy model, `simulate --precision fp16` on a
copy with a fault planted in one branch's weight."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dumpcmp  # noqa: E402
from dumpcmp.cli import main  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402
from dumpcmp.output.advice import advise  # noqa: E402
from dumpcmp.output.report import verdict  # noqa: E402

from helpers.locate_nets import plant_fault  # noqa: E402

F = TensorProto.FLOAT


def two_branches(path: Path) -> Path:
    """x -> conv_b (the faulty branch) and x -> conv_a -> relu_a (healthy), then reshape_b of conv_b, in that
    execution order: reshape_b follows relu_a, a tensor of the other branch (the issue's `Concat_0 1.000000 ->
    Reshape_4 0.964528`)."""
    rng = np.random.default_rng(0)
    wa = rng.standard_normal((8, 4, 3, 3)).astype(np.float32) * 0.3
    wb = rng.standard_normal((8, 4, 3, 3)).astype(np.float32) * 0.3
    nodes = [helper.make_node("Conv", ["x", "wb"], ["b"], name="conv_b", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["x", "wa"], ["a"], name="conv_a", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ra"], name="relu_a"),
             helper.make_node("Reshape", ["b", "shape"], ["rb"], name="reshape_b")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("ra", F, [1, 8, 8, 8]),
                               helper.make_tensor_value_info("rb", F, [1, 512])],
                              [numpy_helper.from_array(wa, "wa"), numpy_helper.from_array(wb, "wb"),
                               numpy_helper.from_array(np.array([1, 512], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


@pytest.fixture(params=["all", "output"])
def faulty_run(tmp_path, request):
    model = two_branches(tmp_path / "m.onnx")
    device = plant_fault(model, tmp_path / "faulty.onnx", "wb", noise=0.3)
    x = np.random.default_rng(3).standard_normal((1, 4, 8, 8)).astype(np.float32)
    dump_golden(model, {"x": x}, tmp_path / "gt")
    sim = simulate(device, tmp_path / "dump", precision="fp16", samples=[{"x": x}], model_name="net",
                   dump_mode=request.param)  # with inputs, and the default output-only dumps
    return tmp_path, sim.json_path


def _name(row) -> str:
    return row.pair.graph_op


def test_largest_drop_follows_edges_not_execution_order(faulty_run, capsys):
    root, graph = faulty_run
    res = dumpcmp.compare(root / "dump", root / "gt", fusion_json=graph)
    outs = [r for r in res if r.result is not None and r.pair.kind == "output"]
    names = [_name(r) for r in outs]
    healthy = next(n for n in names if "relu_a" in n)  # conv_a and relu_a fused
    assert names.index("reshape_b") == names.index(healthy) + 1  # execution order puts the other branch before it
    up, row = res.largest_drop()
    # the fault enters at conv_b (fed by the model's input, through the layout ops); reshape_b only carries it on
    assert _name(row) == "conv_b" and (up is None or up.cosine > 0.9999) and "conv_a" not in _name(up)
    assert row.cosine < 0.99
    drops = {_name(r): (u, d) for u, r, d in res.drops()}
    u, d = drops["reshape_b"]
    assert u is not None and "conv_b" in _name(u) and abs(d) < 1e-3  # measured from its own producer
    # the summary says so, as the CLI prints it
    assert main(["compare", "-l", str(root / "dump"), "-r", str(root / "gt"), "-f", str(graph),
                 "-o", str(root / "r.csv")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "largest drop" in x)
    assert "producer to consumer" in line and "conv_b" in line.split("->")[1] and "reshape_b" not in line
    # the report's verdict names the same row
    v = verdict(res, 0.99)
    assert "conv_b" in v["largest_drop"]["name"] and "conv_a" not in str(v["largest_drop"]["from"])
    # without the graph JSON no edge is known: no drop is claimed, no single layer named from execution order
    bare = dumpcmp.compare(root / "dump", root / "gt")
    assert bare.drops() == [] and bare.largest_drop() is None and "largest drop" not in bare.summary(0.99)
    assert not [a for a in advise(bare) if a.rule in ("single-layer", "drift")]


def test_single_layer_advice_names_the_faulty_branch(faulty_run):
    root, graph = faulty_run
    res = dumpcmp.compare(root / "dump", root / "gt", fusion_json=graph)
    advice = advise(res)
    (a,) = [a for a in advice if a.rule in ("single-layer", "drift")]
    assert a.rule == "single-layer" and "conv_b" in a.layer and "reshape" not in a.layer.lower()
    assert a.evidence["from"] == "producer -> consumer edges"
    assert advice[0] is a  # the verdict's own advice comes first


def test_locate_verdict_decides_single_layer_or_drift(faulty_run):
    root, graph = faulty_run
    res = dumpcmp.compare(root / "dump", root / "gt", fusion_json=graph)
    # locate names one origin: single layer there, whatever the own-cosine shares say
    origin = [{"op": "conv_b", "own_cosine": 0.97, "inherited_cosine": 1.0, "total_cosine": 0.97, "verdict": "origin"},
              {"op": "reshape_b", "own_cosine": 0.9, "inherited_cosine": 0.97, "total_cosine": 0.9,
               "verdict": "adds"},
              {"op": "conv_a", "own_cosine": 1.0, "inherited_cosine": 1.0, "total_cosine": 1.0, "verdict": "ok"}]
    (a,) = [a for a in advise(res, locate=origin) if a.rule in ("single-layer", "drift")]
    assert a.rule == "single-layer" and a.layer == "conv_b" and a.evidence["from"] == "locate verdict"
    assert a.evidence["adds"] == ["reshape_b"] and "reshape_b" in a.message
    # locate replayed every operator and found no origin: drift, not the largest step
    none = [{**r, "verdict": "inherited" if r["op"] != "conv_a" else "ok", "own_cosine": 0.995} for r in origin]
    (b,) = [a for a in advise(res, locate=none) if a.rule in ("single-layer", "drift")]
    assert b.rule == "drift" and b.evidence["from"] == "locate verdict" and "accumulates" in b.message
