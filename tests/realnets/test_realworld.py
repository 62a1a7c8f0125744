"""What the real networks showed, on small models built here (tests/realnets/test_realnets.py runs the networks
themselves): Conv+BN folded before fp16, a weight beyond fp16 reported, 0-d inputs, --shape and the free-dimension
error, no folder left behind, If models simulated, constants kept out of the ground truth and of "first bad",
samples paired with iterations, the largest drop between layers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dumpcmp  # noqa: E402
from dumpcmp.cli import main  # noqa: E402
from dumpcmp.errors import ConfigError  # noqa: E402
from dumpcmp.dumps.ground_truth import read_golden_index  # noqa: E402
from dumpcmp.onnx.golden import dump_golden, golden_from_sources  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402

F = TensorProto.FLOAT


# ops the device never runs or dumps (inputs, weights and folded constants, the graph's output node): the original
# tool's result rows name them with "There is no dump file for my output operator", NaN cells
NOT_DUMPED_TYPES = ("Data", "Const", "NetOutput")


def _unmatched_layers(res) -> list:
    """Unmatched rows other than the original tool's rows for ops that are never dumped."""
    rows = [row for row in res if row.status == "unmatched"]
    assert all("There is no dump file" in row.fail_reason for row in rows if row.op_type in NOT_DUMPED_TYPES)
    return [row for row in rows if row.op_type not in NOT_DUMPED_TYPES]


def _save(path: Path, nodes, inputs, outputs, inits=(), opset=17) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _conv_bn(path: Path, var_scale: float = 1e8, weight_scale: float = 1.0) -> Path:
    """Conv -> BN (running variances ~var_scale, gammas ~sqrt of it: a healthy layer, as exported) -> Relu."""
    rng = np.random.default_rng(0)
    var = (rng.uniform(0.5, 1.5, 8) * var_scale).astype(np.float32)
    inits = [("W", (rng.standard_normal((8, 3, 3, 3)) * 0.3 * weight_scale).astype(np.float32)),
             ("g", np.sqrt(var).astype(np.float32)), ("b", rng.standard_normal(8).astype(np.float32)),
             ("m", (rng.standard_normal(8) * 0.1).astype(np.float32)), ("v", var)]
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    return _save(path, nodes, [helper.make_tensor_value_info("x", F, [1, 3, 8, 8])],
                 [helper.make_tensor_value_info("y", F, None)], inits)


def test_conv_bn_folded_in_fp32_before_fp16(tmp_path):
    model = _conv_bn(tmp_path / "m.onnx")
    dump_golden(model, None, tmp_path / "gt", seed=0)
    r = simulate(model, tmp_path / "dump", seed=0)
    assert r.fused == [["conv", "bn", "relu"]]
    assert not r.notes  # the variances (1e8) never reach fp16: they are folded away
    res = dumpcmp.compare(tmp_path / "dump", tmp_path / "gt", fusion_json=r.json_path)
    assert res.first_below(0.99) is None
    assert min(row.cosine for row in res if row.result is not None) > 0.999


def test_weight_beyond_fp16_is_a_finding(tmp_path):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    w[0, 0] = 1e6
    model = _save(tmp_path / "m.onnx", [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                  [helper.make_tensor_value_info("x", F, [2, 4])], [helper.make_tensor_value_info("y", F, None)],
                  [("w", w)])
    r = simulate(model, tmp_path / "dump", seed=0)
    assert any("'w'" in n and "beyond float16" in n for n in r.notes), r.notes


def _scalar_and_free(path: Path) -> Path:
    """y = Reshape(x, [2, -1]) * s: a 0-d input, and a free dimension 1 cannot fill."""
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
             helper.make_node("Mul", ["r", "s"], ["y"], name="scale")]
    return _save(path, nodes, [helper.make_tensor_value_info("x", F, ["n", 3]),
                               helper.make_tensor_value_info("s", F, [])],
                 [helper.make_tensor_value_info("y", F, None)], [("shape", np.array([2, -1], np.int64))])


def test_scalar_inputs_shape_option_and_free_dims_error(tmp_path, capsys):
    model = _scalar_and_free(tmp_path / "m.onnx")
    out = tmp_path / "gt"
    with pytest.raises(ConfigError, match=r"free dimensions were set to 1 \(x float32 \[n, 3\]\).*--shape"):
        golden_from_sources(model, out, seed=0)
    assert not out.exists()  # no folder left behind
    assert main(["simulate", str(model), "--seed", "0", "-o", str(tmp_path / "dump")]) == 2
    assert "--shape" in capsys.readouterr().err
    assert not (tmp_path / "dump").exists()

    np.save(tmp_path / "s.npy", np.array(2.0, np.float32))  # 0-d
    args = ["-i", f"s={tmp_path / 's.npy'}", "--seed", "0", "--shape", "x=4,3"]
    assert main(["golden", str(model), *args, "-o", str(out)]) == 0
    assert main(["simulate", str(model), *args, "-o", str(tmp_path / "dump")]) == 0
    rec = {r.op_name: r for r in read_golden_index(out)}
    assert rec["x"].shape == (4, 3) and rec["s"].shape == () and rec["scale"].shape == (2, 6)
    with pytest.raises(ConfigError, match="does not fit"):
        golden_from_sources(model, tmp_path / "gt2", seed=0, shapes={"x": (4, 4)})


def test_if_models(tmp_path):
    def branch(name, op):
        return helper.make_graph([helper.make_node(op, ["x", "x"], [f"{name}_y"], name=f"{name}_op")], name, [],
                                 [helper.make_tensor_value_info(f"{name}_y", F, None)])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"], name="cond"),
             helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch("then", "Add"),
                              else_branch=branch("else", "Mul")),
             helper.make_node("Relu", ["y"], ["z"], name="relu")]
    model = _save(tmp_path / "m.onnx", nodes, [helper.make_tensor_value_info("x", F, [2, 3])],
                  [helper.make_tensor_value_info("z", F, None)], [("zero", np.array(0, np.float32))])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    # a static condition: the branch taken is inlined on both sides, its nodes compared as layers
    run = dump_golden(model, {"x": x}, tmp_path / "gt")
    assert {r.op_name for r in run.written} == {"x", "sum", "cond", "then_op", "relu"}
    for precision in ("fp16", "int8"):
        r = simulate(model, tmp_path / precision, precision=precision, samples=[{"x": x}])
        assert "then_op" in r.dumped_ops and not r.notes
        res = dumpcmp.compare(tmp_path / precision, tmp_path / "gt", fusion_json=r.json_path)
        assert not _unmatched_layers(res)
        assert next(row for row in res if row.npu_dump == "then_op").cosine > 0.999
    # a condition that differs between samples: the If stays one op on both sides, and both say what is hidden
    samples = [{"x": x}, {"x": -x}]
    runs = dump_golden(model, samples[1], tmp_path / "gt2", control_samples=samples)
    note = next(r.note for r in runs.records if r.op_name == "if")
    assert "then_branch: then_y" in note and "else_branch: else_y" in note and "not exposed" in note
    r = simulate(model, tmp_path / "two", samples=samples)
    assert any("kept as one op" in n for n in r.notes)
    res = dumpcmp.comparison.compare.compare_runs(tmp_path / "two", tmp_path / "gt2", fusion_json=r.json_path,
                                          data_index=1)[0]
    assert next(row for row in res if row.op_type == "If").cosine > 0.999


def _with_constants(path: Path) -> Path:
    """A weight built by nodes (Constant -> Mul): folded by a compiler, no layer of its own."""
    w = helper.make_tensor("wc", F, [3], [1.0, 2.0, 3.0])
    nodes = [helper.make_node("Constant", [], ["w0"], name="const", value=w),
             helper.make_node("Mul", ["w0", "two"], ["w"], name="wscale"),
             helper.make_node("Mul", ["x", "w"], ["y"], name="apply"),
             helper.make_node("Relu", ["y"], ["z"], name="relu")]
    return _save(path, nodes, [helper.make_tensor_value_info("x", F, [2, 3])],
                 [helper.make_tensor_value_info("z", F, None)], [("two", np.array(2.0, np.float32))])


def test_constants_not_ground_truth_unless_asked(tmp_path):
    model = _with_constants(tmp_path / "m.onnx")
    run = dump_golden(model, None, tmp_path / "gt", seed=0)
    written = {r.op_name for r in run.written}
    assert written == {"x", "apply", "relu"}
    assert {r.op_name for r in run.records if "constant" in r.note} == {"const", "wscale"}
    r = simulate(model, tmp_path / "dump", seed=0)
    assert "const" not in r.dumped_ops and "wscale" not in r.dumped_ops
    res = dumpcmp.compare(tmp_path / "dump", tmp_path / "gt", fusion_json=r.json_path)
    assert not _unmatched_layers(res)
    # the weights, the constant and the node folded into one: Const rows without a dump, never "first bad"
    assert {row.npu_dump for row in res if row.op_type == "Const"} == {"w0", "two", "wscale"}
    assert all(row.result is None for row in res if row.op_type == "Const")
    assert res.never_dumped() == {"inputs (Data)": 1, "weights and constants (Const)": 3,
                                  "graph outputs (NetOutput)": 1}
    assert "of the 5 unmatched: 1 inputs (Data), 3 weights and constants (Const), 1 graph outputs (NetOutput)" \
        in res.summary()

    run = dump_golden(model, None, tmp_path / "gt_all", seed=0, include_constants=True)
    assert {r.op_name for r in run.written} == {"x", "const", "wscale", "apply", "relu"}
    # a device dump whose "weight" differs: reported apart, never the first bad layer
    res = dumpcmp.compare(tmp_path / "dump", tmp_path / "gt_all", fusion_json=r.json_path)
    assert all(not res.is_constant(row) for row in res if row.result is not None)  # nothing dumped for them


def test_samples_pair_with_iterations(tmp_path, capsys):
    model = _conv_bn(tmp_path / "m.onnx", var_scale=1.0)
    rng = np.random.default_rng(5)
    (tmp_path / "in").mkdir()
    for k in range(2):
        np.save(tmp_path / "in" / f"{k}.npy", rng.standard_normal((1, 3, 8, 8)).astype(np.float32))
    src = ["-i", str(tmp_path / "in")]
    assert main(["golden", str(model), *src, "-o", str(tmp_path / "gt")]) == 0
    assert main(["simulate", str(model), *src, "-o", str(tmp_path / "dump")]) == 0
    capsys.readouterr()
    results = dumpcmp.comparison.compare.compare_runs(tmp_path / "dump", tmp_path / "gt",
                                              fusion_json=tmp_path / "dump" / "model.json")
    assert len(results) == 2
    for k, res in enumerate(results):
        assert res.notes == [f"ground truth: sample folder {k}/ (iteration {k})"]
        assert res.first_below(0.999) is None
    crossed = dumpcmp.comparison.compare.compare_runs(tmp_path / "dump", tmp_path / "gt", data_index=0, gt_sample=1,
                                              fusion_json=tmp_path / "dump" / "model.json")
    assert crossed[0].first_below(0.9) is not None  # sample 1 against iteration 0: genuinely different
    assert "--gt-sample" in crossed[0].summary()
    swapped = dumpcmp.comparison.compare.compare_runs(tmp_path / "dump", tmp_path / "gt", gt_sample={0: 1, 1: 0},
                                              fusion_json=tmp_path / "dump" / "model.json")
    assert [r.notes for r in swapped] == [["ground truth: sample folder 1/ (--gt-sample)"],
                                          ["ground truth: sample folder 0/ (--gt-sample)"]]
    assert main(["compare", "-l", str(tmp_path / "dump"), "-r", str(tmp_path / "gt"), "--gt-sample", "0:1,1:0",
                 "-o", str(tmp_path / "r.csv")]) == 0
    assert "sample folder 1/ (--gt-sample)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:  # a usage error, as argparse reports one
        main(["compare", "-l", str(tmp_path / "dump"), "-r", str(tmp_path / "gt"), "--gt-sample", "0:x"])
    assert info.value.code == 2 and "ITERATION:K pairs" in capsys.readouterr().err


def test_largest_drop_in_summary(tmp_path):
    model = _conv_bn(tmp_path / "m.onnx", var_scale=1.0)
    dump_golden(model, None, tmp_path / "gt", seed=0)
    r = simulate(model, tmp_path / "dump", precision="int8", seed=0)
    res = dumpcmp.compare(tmp_path / "dump", tmp_path / "gt", fusion_json=r.json_path)
    drop = res.largest_drop()
    assert drop is not None
    a, b = drop
    outs = [x for x in res if x.result is not None and x.pair.kind == "output"]
    steps = [p.cosine - q.cosine for p, q in zip(outs, outs[1:])]
    assert a.cosine - b.cosine == pytest.approx(max(steps))


def test_detail_by_original_name_of_a_fused_op(tmp_path, capsys):
    model = _conv_bn(tmp_path / "m.onnx", var_scale=1.0)
    dump_golden(model, None, tmp_path / "gt", seed=0)
    r = simulate(model, tmp_path / "dump", seed=0)
    base = ["compare", "-l", str(tmp_path / "dump"), "-r", str(tmp_path / "gt"), "-f", str(r.json_path)]
    assert main([*base, "-d", "relu", "-o", str(tmp_path / "d1")]) == 0  # original name of the fused op's end
    assert "elements compared" in capsys.readouterr().out
    assert main([*base, "-d", "convbnrelu", "-o", str(tmp_path / "d2")]) == 0  # the device name
    assert main([*base, "-d", "bnn", "-o", str(tmp_path / "d3")]) == 2
    assert "bn (in convbnrelu)" in capsys.readouterr().err


def test_cli_names_agree(tmp_path, capsys):
    from dumpcmp.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction)).choices
    # msaccucmp's short flags stay where the original has them
    compare = {o: a.dest for a in sub["compare"]._actions for o in a.option_strings}
    for flag, dest in {"-l": "left", "-r": "right", "-f": "fusion_json", "-q": "quant_fusion_rule", "-o": "output",
                       "-d": "op", "-t": "tensor", "-i": "index", "-alg": "algorithms", "-csv": "csv",
                       "-custom": "custom", "--quiet": "quiet"}.items():
        assert compare[flag] == dest, flag
    # -q is never quiet; --quiet means the same wherever it is
    for name, p in sub.items():
        opts = {o: a for a in p._actions for o in a.option_strings}
        assert "-q" not in opts or opts["-q"].dest != "quiet", name
        if "--quiet" in opts:
            assert opts["--quiet"].dest == "quiet"
        if "--input" in opts and name in ("golden", "simulate"):
            assert opts["-i"] is opts["--input"]
    assert "examples:" in sub["compare"].format_help()


def test_view_and_shape_take_the_file_both_ways(tmp_path, capsys):
    from dumpcmp.dumps.dump import TensorData, write_dump

    path = tmp_path / "Relu.r.1.1700000000000000"
    write_dump(path, op_name="r", outputs=[TensorData(np.arange(6, dtype=np.float32).reshape(2, 3))])
    for argv in (["view", str(path)], ["view", "-i", str(path)], ["shape", str(path), "-format", "ND"],
                 ["shape", "-i", str(path), "-format", "ND"]):
        assert main([*argv, "-o", str(tmp_path / "out"), "--force"]) == 0, argv
    assert main(["view", "-o", str(tmp_path / "out")]) == 2
    assert "first argument or with -i" in capsys.readouterr().err


def test_device_vs_device_right_run_selectable(tmp_path, capsys):
    model = _conv_bn(tmp_path / "m.onnx", var_scale=1.0)
    rng = np.random.default_rng(9)
    (tmp_path / "in").mkdir()
    for k in range(2):
        np.save(tmp_path / "in" / f"{k}.npy", rng.standard_normal((1, 3, 8, 8)).astype(np.float32))
    assert main(["simulate", str(model), "-i", str(tmp_path / "in"), "-o", str(tmp_path / "a"), "--quiet"]) == 0
    same = dumpcmp.comparison.compare.compare_runs(tmp_path / "a", tmp_path / "a", data_index=1, right_data_index=1)
    other = dumpcmp.comparison.compare.compare_runs(tmp_path / "a", tmp_path / "a", data_index=1, right_data_index=0)
    assert all(r.cosine == pytest.approx(1.0) for r in same[0] if r.result is not None)
    assert any(r.cosine < 0.9 for r in other[0] if r.result is not None)
    assert main(["compare", "-l", str(tmp_path / "a"), "-r", str(tmp_path / "a"), "--iteration", "1",
                 "--right-iteration", "0", "--quiet"]) == 0


def test_one_ground_truth_for_several_iterations_is_said(tmp_path):
    model = _conv_bn(tmp_path / "m.onnx", var_scale=1.0)
    x = np.random.default_rng(3).standard_normal((1, 3, 8, 8)).astype(np.float32)
    dump_golden(model, {"x": x}, tmp_path / "gt")
    simulate(model, tmp_path / "dump", samples=[{"x": x}, {"x": x}])
    results = dumpcmp.comparison.compare.compare_runs(tmp_path / "dump", tmp_path / "gt")
    assert len(results) == 2
    for res in results:
        assert "one set (no sample folders) for each of the 2 iterations" in res.summary()


def test_values_below_fp16_range_are_not_a_broken_layer(tmp_path):
    nodes = [helper.make_node("Mul", ["x", "tiny"], ["t"], name="shrink"),
             helper.make_node("Sigmoid", ["t"], ["y"], name="sig"),
             helper.make_node("Mul", ["t", "tiny"], ["z"], name="shrink2")]
    model = _save(tmp_path / "m.onnx", nodes, [helper.make_tensor_value_info("x", F, [4, 8])],
                  [helper.make_tensor_value_info("y", F, None), helper.make_tensor_value_info("z", F, None)],
                  [("tiny", np.array(1e-4, np.float32))])
    dump_golden(model, None, tmp_path / "gt", seed=0)
    r = simulate(model, tmp_path / "dump", seed=0)
    res = dumpcmp.compare(tmp_path / "dump", tmp_path / "gt", fusion_json=r.json_path)
    shrink2 = next(row for row in res if row.npu_dump == "shrink2")  # |z| ~ 1e-8: flushed to (sub)normal fp16
    assert res.below_fp16_range(shrink2) and not shrink2.cosine > 0.99
    assert not res.below_fp16_range(next(row for row in res if row.npu_dump == "sig"))
    assert res.first_below(0.99) is None
    assert "below float16's normal range" in res.summary()


def test_loop_model_simulated_as_one_op(tmp_path):
    # body: acc_out = acc_in * w + x (w and x come from the enclosing graph: w a weight, x an activation)
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc_in", "w"], ["m"], name="body_mul"),
         helper.make_node("Add", ["m", "h"], ["acc_out"], name="body_add"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("acc_in", F, [2, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", F, [2, 3])])
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="relu"),
             helper.make_node("Loop", ["n", "", "h"], ["acc"], name="loop", body=body),
             helper.make_node("Sigmoid", ["acc"], ["y"], name="sig")]
    model = _save(tmp_path / "m.onnx", nodes, [helper.make_tensor_value_info("x", F, [2, 3])],
                  [helper.make_tensor_value_info("y", F, None)],
                  [("n", np.array(3, np.int64)), ("w", np.full((2, 3), 0.5, np.float32))])
    run = dump_golden(model, None, tmp_path / "gt", seed=0)
    note = next(r.note for r in run.records if r.op_name == "loop")
    assert "body: m, acc_out, cond_out" in note
    for precision in ("fp16", "int8"):
        r = simulate(model, tmp_path / precision, precision=precision, seed=0)
        res = dumpcmp.compare(tmp_path / precision, tmp_path / "gt", fusion_json=r.json_path)
        assert next(row for row in res if row.npu_dump == "loop").cosine > 0.999
        assert res.first_below(0.99) is None


def test_free_dims_hint_only_for_a_failed_run(tmp_path):
    model = _scalar_and_free(tmp_path / "m.onnx")
    np.save(tmp_path / "s.npy", np.array(2.0, np.float32))
    golden_from_sources(model, tmp_path / "gt", [f"s={tmp_path / 's.npy'}"], seed=0, shapes={"x": (2, 3)})
    with pytest.raises(ConfigError) as info:  # a folder that holds ground truth: nothing to do with free dims
        golden_from_sources(model, tmp_path / "gt", [f"s={tmp_path / 's.npy'}"], seed=0)
    assert "already holds ground truth" in str(info.value) and "--shape" not in str(info.value)
