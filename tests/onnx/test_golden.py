"""Ground truth from ONNX models built here with onnx.helper: every file against onnxruntime's own plain run, against
NumPy implementations of single nodes, and against the ONNX package's reference evaluator."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.errors import ConfigError, DumpcmpError, NotFoundError  # noqa: E402
from dumpcmp.dumps.ground_truth import INDEX_COLUMNS, INDEX_NAME, read_golden_index  # noqa: E402
from dumpcmp.onnx.golden import dump_golden, golden_from_sources, sanitize_name  # noqa: E402

OPSET = 17
IR_VERSION = 8  # onnxruntime reads older IR versions than the newest onnx writes by default

F = TensorProto.FLOAT


def make_model(nodes, inputs, outputs, initializers=(), opset=OPSET):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)
    return model


def save(model, path: Path, **kw) -> Path:
    onnx.save(model, str(path), **kw)
    return path


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def load_written(run):
    return {(r.op_name, r.output_index): np.load(run.out_dir / r.file) for r in run.written}


def plain_ort(path: Path, feeds, optimized=False):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


# -- a small network: conv, relu, split (two outputs), topk (two outputs), matmul, gemm, add, softmax -----------
@pytest.fixture
def net(tmp_path, rng):
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    fc = rng.standard_normal((8, 5)).astype(np.float32)
    gw = rng.standard_normal((5, 5)).astype(np.float32)
    gb = rng.standard_normal(5).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["in.put", "w", "b"], ["conv_out"], name="/layer1/conv.0", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv_out"], ["relu_out"], name="relu 1"),
        helper.make_node("Split", ["relu_out", "split_sizes"], ["s0", "s1"], name="back\\split", axis=1),
        helper.make_node("ReduceMax", ["s0"], ["pooled"], name="pool", axes=[1], keepdims=0),
        helper.make_node("Reshape", ["pooled", "flat_shape"], ["flat"], name="flatten"),
        helper.make_node("MatMul", ["flat", "fc"], ["mm"], name="fc/matmul"),
        helper.make_node("Gemm", ["mm", "gw", "gb"], ["gemm"], name="fc2", transB=1, alpha=0.5, beta=2.0),
        helper.make_node("Add", ["gemm", "mm"], ["sum"], name="residual.add"),
        helper.make_node("Softmax", ["sum"], ["prob"], name="prob", axis=-1),
        helper.make_node("TopK", ["prob", "k"], ["top_v", "top_i"], name="top/k", axis=-1),
    ]
    inits = [init("w", w), init("b", b), init("fc", fc), init("gw", gw), init("gb", gb),
             init("split_sizes", np.array([2, 2], np.int64)), init("flat_shape", np.array([1, 8], np.int64)),
             init("k", np.array([3], np.int64))]
    model = make_model(nodes, [vi("in.put", [1, 2, 2, 4])],
                       [vi("prob", [1, 5]), vi("top_v", [1, 3]), vi("top_i", [1, 3], TensorProto.INT64)], inits)
    onnx.checker.check_model(model)
    path = save(model, tmp_path / "net.onnx")
    x = rng.standard_normal((1, 2, 2, 4)).astype(np.float32)
    return path, x


def test_network_files_match_reference_evaluator_and_plain_run(net, tmp_path):
    path, x = net
    run = dump_golden(path, {"in.put": x}, tmp_path / "out")
    files = load_written(run)
    # The model's own final outputs: bit-equal to an independent plain onnxruntime session.
    plain = plain_ort(path, {"in.put": x})
    np.testing.assert_array_equal(files[("prob", 0)], plain["prob"])
    np.testing.assert_array_equal(files[("top/k", 0)], plain["top_v"])
    np.testing.assert_array_equal(files[("top/k", 1)], plain["top_i"])
    for name, value in plain.items():
        np.testing.assert_array_equal(run.outputs[name], value)
    # onnxruntime's optimised graph fuses nodes (MatMul+Add, ...) and may round differently, never by more.
    optimized = plain_ort(path, {"in.put": x}, optimized=True)
    np.testing.assert_allclose(files[("prob", 0)], optimized["prob"], rtol=1e-5, atol=1e-7)
    # Every intermediate output against the ONNX reference evaluator (pure NumPy, a different implementation).
    model = onnx.load(str(path))
    ref_names = [o for n in model.graph.node for o in n.output]
    ref = dict(zip(ref_names, ReferenceEvaluator(model).run(ref_names, {"in.put": x})))
    by_tensor = {r.tensor_name: np.load(run.out_dir / r.file) for r in run.written}
    assert set(ref) <= set(by_tensor)
    for name, expected in ref.items():
        np.testing.assert_allclose(by_tensor[name], expected, rtol=1e-5, atol=1e-5, err_msg=name)
    np.testing.assert_array_equal(files[("in.put", 0)], x)


def test_network_index_and_names(net, tmp_path):
    path, x = net
    run = dump_golden(path, {"in.put": x}, tmp_path / "out")
    with open(tmp_path / "out" / INDEX_NAME, newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == INDEX_COLUMNS
    model = onnx.load(str(path))
    expected = [("in.put", "Input", 0, "in.put")] + [
        (n.name, n.op_type, i, o) for n in model.graph.node for i, o in enumerate(n.output)]
    assert [(r["op_name"], r["op_type"], int(r["output_index"]), r["tensor_name"]) for r in rows] == expected
    assert [int(r["order"]) for r in rows] == list(range(len(rows)))
    timestamps = []
    for r in rows:
        name = r["file"]
        op, index, ts, ext = name.rsplit(".", 3)
        assert ext == "npy" and len(ts) == 16 and index == r["output_index"]
        assert op == r["file_op_name"] and set(op) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                         "0123456789_-")
        timestamps.append(int(ts))
        array = np.load(tmp_path / "out" / name)
        assert json.loads(r["shape"]) == list(array.shape) and r["dtype"] == str(array.dtype)
    assert timestamps == sorted(timestamps) and len(set(timestamps)) == len(timestamps)
    names = {r["op_name"]: r["file_op_name"] for r in rows}
    assert names["/layer1/conv.0"] == "_layer1_conv_0"
    assert names["relu 1"] == "relu_1"
    assert names["back\\split"] == "back_split"
    assert names["residual.add"] == "residual_add"
    assert read_golden_index(tmp_path / "out") == run.records
    info = json.loads((tmp_path / "out" / "golden_run.json").read_text())
    assert info["batches"] == 1 and info["checked_against_plain_run"] is True


def test_sanitize_name():
    assert sanitize_name("a.b/c\\d e") == "a_b_c_d_e"
    assert sanitize_name("plain-name_1") == "plain-name_1"


def test_batches_bound_memory_and_give_identical_files(net, tmp_path):
    path, x = net
    whole = dump_golden(path, {"in.put": x}, tmp_path / "whole")
    small = dump_golden(path, {"in.put": x}, tmp_path / "small", batch_bytes=100)
    # 100 bytes: every output bigger than that gets its own run; small ones share, staying within the budget.
    sizes = {r.tensor_name: int(np.prod(r.shape)) * np.dtype(r.dtype).itemsize for r in small.written}
    assert len(small.batches) > 1
    for batch in small.batches:
        assert len(batch) == 1 or sum(sizes[n] for n in batch) <= 100
    assert [n for b in small.batches for n in b] == [r.tensor_name for r in whole.written[1:]]
    a, b = load_written(whole), load_written(small)
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


def test_second_run_needs_force_and_wins_by_timestamp(net, tmp_path):
    path, x = net
    first = dump_golden(path, {"in.put": x}, tmp_path / "out")
    with pytest.raises(ConfigError, match="already holds ground truth"):
        dump_golden(path, {"in.put": x}, tmp_path / "out")
    second = dump_golden(path, {"in.put": x * 2}, tmp_path / "out", force=True)
    last_first = max(int(r.file.rsplit(".", 2)[1]) for r in first.written)
    assert min(int(r.file.rsplit(".", 2)[1]) for r in second.written) > last_first



def test_a_run_stopped_half_way_leaves_no_partial_set(net, tmp_path, monkeypatch):
    import dumpcmp.onnx.golden as G

    path, x = net
    calls = []
    real = G._save_npy

    def failing(target, array):
        calls.append(target)
        if len(calls) == 4:
            raise KeyboardInterrupt  # Ctrl-C (or SIGTERM, which the CLI turns into the same) after three files
        real(target, array)

    monkeypatch.setattr(G, "_save_npy", failing)
    with pytest.raises(KeyboardInterrupt):
        dump_golden(path, {"in.put": x}, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # the folder this run made goes too (issue #12: nothing left behind)
    (tmp_path / "out").mkdir()
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        dump_golden(path, {"in.put": x}, tmp_path / "out")
    assert os.listdir(tmp_path / "out") == []  # a folder given kept, without three files lacking their index
    monkeypatch.setattr(G, "_save_npy", real)
    run = dump_golden(path, {"in.put": x}, tmp_path / "out")
    assert (tmp_path / "out" / INDEX_NAME).exists() and len(run.written) > 3

# -- single nodes against NumPy --------------------------------------------------------------------------------
def np_conv(x, w, b, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = xp.shape
    k = w.shape[2]
    out = np.zeros((n, w.shape[0], h - k + 1, wd - k + 1), np.float64)
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            out[:, :, i, j] = np.tensordot(xp[:, :, i:i + k, j:j + k], w, axes=([1, 2, 3], [1, 2, 3]))
    return out + b.reshape(1, -1, 1, 1)


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def single_cases(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32)
    m = rng.standard_normal((4, 5)).astype(np.float32)
    c = rng.standard_normal((5,)).astype(np.float32)
    x4 = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w4 = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    b4 = rng.standard_normal(3).astype(np.float32)
    return {
        "Relu": (helper.make_node("Relu", ["a"], ["y"], name="n"), {"a": a}, {}, [np.maximum(a, 0)]),
        "Add": (helper.make_node("Add", ["a", "b"], ["y"], name="n"), {"a": a, "b": b}, {}, [a + b]),
        "MatMul": (helper.make_node("MatMul", ["a", "m"], ["y"], name="n"), {"a": a}, {"m": m},
                   [a.astype(np.float64) @ m]),
        "Gemm": (helper.make_node("Gemm", ["a", "mt", "c"], ["y"], name="n", transB=1, alpha=0.5, beta=3.0),
                 {"a": a}, {"mt": m.T.copy(), "c": c}, [0.5 * (a.astype(np.float64) @ m) + 3.0 * c]),
        "Softmax": (helper.make_node("Softmax", ["a"], ["y"], name="n", axis=-1), {"a": a}, {},
                    [np_softmax(a.astype(np.float64))]),
        "Conv": (helper.make_node("Conv", ["x", "w", "b"], ["y"], name="n", pads=[1, 1, 1, 1]), {"x": x4},
                 {"w": w4, "b": b4}, [np_conv(x4.astype(np.float64), w4, b4, 1)]),
        "Split": (helper.make_node("Split", ["a", "sizes"], ["y", "z"], name="n", axis=1), {"a": a},
                  {"sizes": np.array([1, 3], np.int64)}, [a[:, :1], a[:, 1:]]),
        "TopK": (helper.make_node("TopK", ["a", "k"], ["y", "z"], name="n", axis=1), {"a": a},
                 {"k": np.array([2], np.int64)},
                 [-np.sort(-a, axis=1)[:, :2], np.argsort(-a, axis=1, kind="stable")[:, :2]]),
    }


@pytest.mark.parametrize("op", ["Relu", "Add", "MatMul", "Gemm", "Softmax", "Conv", "Split", "TopK"])
def test_single_node_against_numpy_and_reference(op, tmp_path, rng):
    node, feeds, weights, expected = single_cases(rng)[op]
    outputs = [vi(name, list(want.shape), TensorProto.INT64 if want.dtype.kind == "i" else F)
               for name, want in zip(node.output, expected)]
    inputs = [vi(name, list(v.shape)) for name, v in feeds.items()]
    model = make_model([node], inputs, outputs, [init(k, v) for k, v in weights.items()])
    onnx.checker.check_model(model)
    path = save(model, tmp_path / f"{op}.onnx")
    run = dump_golden(path, feeds, tmp_path / "out")
    files = load_written(run)
    ref = ReferenceEvaluator(model).run(None, feeds)
    assert [k for k in files if k[0] == "n"] == [("n", i) for i in range(len(expected))]
    for i, want in enumerate(expected):
        got = files[("n", i)]
        assert got.shape == want.shape
        if got.dtype.kind == "i":
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(got, ref[i])
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(got, ref[i], rtol=1e-5, atol=1e-5)
    for name, value in feeds.items():
        np.testing.assert_array_equal(files[(name, 0)], value)


# -- graph shapes the dumper must handle -----------------------------------------------------------------------
def test_unsorted_graph_runs_in_topological_order(tmp_path):
    nodes = [helper.make_node("Neg", ["b"], ["c"], name="third"),
             helper.make_node("Relu", ["a"], ["b"], name="second"),
             helper.make_node("Abs", ["x"], ["a"], name="first")]
    model = make_model(nodes, [vi("x", [3])], [vi("c", [3])])
    path = save(model, tmp_path / "m.onnx")
    x = np.array([-1.0, 2.0, -3.0], np.float32)
    run = dump_golden(path, {"x": x}, tmp_path / "out")
    assert [r.op_name for r in run.records] == ["x", "first", "second", "third"]
    np.testing.assert_array_equal(np.load(run.out_dir / run.records[-1].file), -np.maximum(np.abs(x), 0))


def test_colliding_and_long_names(tmp_path):
    long = "block/" * 60 + "conv"
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="a.b"),
             helper.make_node("Neg", ["a"], ["b"], name="a/b"),
             helper.make_node("Abs", ["b"], ["c"], name=long)]
    path = save(make_model(nodes, [vi("x", [2])], [vi("c", [2])]), tmp_path / "m.onnx")
    run = dump_golden(path, {"x": np.ones(2, np.float32)}, tmp_path / "out")
    recs = {r.op_name: r for r in run.records}
    assert recs["a.b"].file_op_name == "a_b" and recs["a/b"].file_op_name == "a_b_1"
    assert "renamed" in recs["a/b"].note
    assert recs[long].file.isdigit() and "mapping.csv" in recs[long].note
    assert (run.out_dir / recs[long].file).is_file()
    # a scan of the folder resolves the hashed file back to its {op}.{output_index} key
    from dumpcmp.dumps.naming import sanitize
    from dumpcmp.dumps.scan import scan_ground_truth

    entry = scan_ground_truth(run.out_dir).get(sanitize(long), 0)
    assert entry is not None and entry.file_name == recs[long].file


def test_sequence_and_optional_outputs_are_skipped_with_a_note(tmp_path):
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], name="to_seq", axis=0),
             helper.make_node("ConcatFromSequence", ["seq"], ["cat"], name="from_seq", axis=0),
             helper.make_node("Dropout", ["cat"], ["y", ""], name="drop")]
    path = save(make_model(nodes, [vi("x", [3, 2])], [vi("y", [3, 2])]), tmp_path / "m.onnx")
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    run = dump_golden(path, {"x": x}, tmp_path / "out")
    recs = {(r.op_name, r.output_index): r for r in run.records}
    assert recs[("to_seq", 0)].file == "" and "sequence" in recs[("to_seq", 0)].note
    assert recs[("drop", 1)].file == "" and "optional" in recs[("drop", 1)].note
    np.testing.assert_array_equal(np.load(run.out_dir / recs[("drop", 0)].file), x)
    with open(run.index_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["file"] == "" for r in rows] == [False, True, False, False, True]


def test_external_data_model(net, tmp_path):
    path, x = net
    model = onnx.load(str(path))
    ext_dir = tmp_path / "ext"
    ext_dir.mkdir()
    ext = save(model, ext_dir / "net.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
               location="net.weights", size_threshold=100)  # shape inputs stay inline, as onnxruntime needs
    assert (ext_dir / "net.weights").stat().st_size > 0
    inline = load_written(dump_golden(path, {"in.put": x}, tmp_path / "inline"))
    for strategy in ("option", "file"):
        got = load_written(dump_golden(ext, {"in.put": x}, tmp_path / strategy, _external_strategy=strategy))
        assert got.keys() == inline.keys()
        for key in got:
            np.testing.assert_array_equal(got[key], inline[key])
    assert sorted(p.name for p in ext_dir.iterdir()) == ["net.onnx", "net.weights"]  # no temporary left
    (ext_dir / "net.weights").unlink()
    with pytest.raises(NotFoundError, match="net.weights"):
        dump_golden(ext, {"in.put": x}, tmp_path / "missing")


def test_random_inputs_are_reproducible(net, tmp_path):
    path, _ = net
    a = dump_golden(path, None, tmp_path / "a", seed=7)
    b = dump_golden(path, None, tmp_path / "b", seed=7)
    c = dump_golden(path, None, tmp_path / "c", seed=8)
    x = load_written(a)[("in.put", 0)]
    expected = np.random.default_rng([7, 0]).standard_normal((1, 2, 2, 4)).astype(np.float32)
    np.testing.assert_array_equal(x, expected)
    np.testing.assert_array_equal(load_written(b)[("prob", 0)], load_written(a)[("prob", 0)])
    assert not np.array_equal(load_written(c)[("in.put", 0)], x)


# -- input files and errors ------------------------------------------------------------------------------------
def two_input_model(tmp_path):
    nodes = [helper.make_node("Mul", ["image", "mask"], ["y"], name="mul")]
    model = make_model(nodes, [vi("image", [1, 1, 2, 3]), vi("mask", ["batch", 3], TensorProto.INT32)],
                       [vi("y", [1, 1, 2, 3])])
    nodes = [helper.make_node("Cast", ["mask"], ["maskf"], name="cast", to=F),
             helper.make_node("Mul", ["image", "maskf"], ["y"], name="mul")]
    model = make_model(nodes, model.graph.input, model.graph.output)
    return save(model, tmp_path / "two.onnx")


def test_npy_and_bin_inputs_by_name(tmp_path, rng):
    path = two_input_model(tmp_path)
    image = rng.standard_normal((1, 1, 2, 3)).astype(np.float32)
    mask = np.array([[1, 0, 2], [3, 1, 0]], np.int32)
    np.save(tmp_path / "image.npy", image)
    mask.tofile(tmp_path / "mask.bin")  # the free dim "batch" is inferred from the size: 2
    runs = golden_from_sources(path, tmp_path / "out", [f"mask={tmp_path / 'mask.bin'}",
                                                        f"image={tmp_path / 'image.npy'}"])
    files = load_written(runs[0])
    np.testing.assert_array_equal(files[("mask", 0)], mask)
    np.testing.assert_array_equal(files[("mul", 0)], image * mask.astype(np.float32))
    # positional: in the model's input order
    runs = golden_from_sources(path, tmp_path / "pos", [str(tmp_path / "image.npy"), str(tmp_path / "mask.bin")])
    np.testing.assert_array_equal(load_written(runs[0])[("mul", 0)], files[("mul", 0)])


@pytest.mark.parametrize("case, error, pattern", [
    ("unknown_name", ConfigError, r"no input 'nope'.*image, mask"),
    ("wrong_dtype", ConfigError, r"image.npy.*'image' must be float32.*float64"),
    ("wrong_shape", ConfigError, r"image.npy.*'image' must have shape \[1, 1, 2, 3\].*\[1, 2, 3\]"),
    ("bad_bin", ConfigError, r"mask.bin: 7 bytes is not a whole number of int32"),
    ("missing", ConfigError, r"input 'mask'.*has no data.*--seed"),
    ("missing_file", NotFoundError, r"nothere.npy"),
    ("too_many", ConfigError, r"3 unnamed -i sources for 2 inputs"),
])
def test_input_errors_name_the_input(case, error, pattern, tmp_path):
    path = two_input_model(tmp_path)
    np.save(tmp_path / "image.npy", np.zeros((1, 1, 2, 3), np.float32))
    np.save(tmp_path / "mask.npy", np.zeros((2, 3), np.int32))
    good = [f"image={tmp_path / 'image.npy'}", f"mask={tmp_path / 'mask.npy'}"]
    sources = {
        "unknown_name": good + [f"nope={tmp_path / 'image.npy'}"],
        "wrong_dtype": None, "wrong_shape": None, "bad_bin": None,
        "missing": good[:1],
        "missing_file": [f"image={tmp_path / 'nothere.npy'}", good[1]],
        "too_many": [str(tmp_path / "image.npy")] * 3,
    }[case]
    if case == "wrong_dtype":
        np.save(tmp_path / "image.npy", np.zeros((1, 1, 2, 3), np.float64))
        sources = good
    elif case == "wrong_shape":
        np.save(tmp_path / "image.npy", np.zeros((1, 2, 3), np.float32))
        sources = good
    elif case == "bad_bin":
        (tmp_path / "mask.bin").write_bytes(b"\0" * 7)
        sources = [good[0], f"mask={tmp_path / 'mask.bin'}"]
    with pytest.raises(error, match=pattern):
        golden_from_sources(path, tmp_path / "out", sources)
    # The CLI reports the same as one line and exit code 2.
    assert main(["golden", str(path), "-i", *sources, "-o", str(tmp_path / "cli")]) == 2


def test_array_api_errors(tmp_path):
    path = two_input_model(tmp_path)
    image = np.zeros((1, 1, 2, 3), np.float32)
    with pytest.raises(ConfigError, match="no input 'imagex'"):
        dump_golden(path, {"imagex": image}, tmp_path / "o")
    with pytest.raises(ConfigError, match="'mask' must be int32"):
        dump_golden(path, {"image": image, "mask": np.zeros((1, 3), np.int64)}, tmp_path / "o")


def test_model_errors(tmp_path, capsys):
    with pytest.raises(NotFoundError, match="no such model file"):
        dump_golden(tmp_path / "absent.onnx", None, tmp_path / "o", seed=0)
    (tmp_path / "junk.onnx").write_bytes(b"this is not a protobuf \xff\xff\xff")
    with pytest.raises(ConfigError, match="junk.onnx"):
        dump_golden(tmp_path / "junk.onnx", None, tmp_path / "o", seed=0)
    # loads, but cannot run: a Reshape to a size that does not fit
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")]
    bad = make_model(nodes, [vi("x", [2, 3])], [vi("y", [4, 4])], [init("shape", np.array([4, 4], np.int64))])
    path = save(bad, tmp_path / "bad.onnx")
    with pytest.raises(DumpcmpError, match="bad.onnx: onnxruntime failed to run"):
        dump_golden(path, None, tmp_path / "o2", seed=0)
    assert main(["golden", str(path), "--seed", "0", "-o", str(tmp_path / "o3")]) == 2
    assert "bad.onnx" in capsys.readouterr().err
    # an op onnxruntime does not know
    unknown = make_model([helper.make_node("NoSuchOp", ["x"], ["y"], name="n")], [vi("x", [2])], [vi("y", [2])])
    path = save(unknown, tmp_path / "unknown.onnx")
    with pytest.raises(ConfigError, match="unknown.onnx: onnxruntime cannot load"):
        dump_golden(path, None, tmp_path / "o4", seed=0)


# -- images through a preprocessing script ---------------------------------------------------------------------
PREPROCESS = '''
import numpy as np

def read_pgm(path):
    with open(path, "rb") as f:
        data = f.read()
    fields = data.split(maxsplit=4)
    assert fields[0] == b"P5", "not a binary PGM"
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(fields[4][: w * h], np.uint8).reshape(h, w)

def get_image(img_path, resizeH=2, resizeW=2, resizeC=1, norm=True, mean=100.0, std=50.0, nchw=False):
    img = read_pgm(img_path)[:resizeH, :resizeW].astype(np.float64)
    if norm:
        img = (img - mean) / std
    img = img.reshape(resizeH, resizeW, resizeC)
    if nchw:
        img = np.transpose(img, (2, 0, 1))
    return np.expand_dims(img, 0)
'''


def write_pgm(path: Path, pixels: np.ndarray) -> Path:
    h, w = pixels.shape
    path.write_bytes(f"P5\n{w} {h}\n255\n".encode() + pixels.astype(np.uint8).tobytes())
    return path


def image_model(tmp_path):
    nodes = [helper.make_node("Relu", ["img"], ["y"], name="relu")]
    return save(make_model(nodes, [vi("img", [1, 1, 3, 4])], [vi("y", [1, 1, 3, 4])]), tmp_path / "img.onnx")


def test_preprocessing_script_images(tmp_path, rng):
    path = image_model(tmp_path)
    script = tmp_path / "pre.py"
    script.write_text(PREPROCESS)
    folder = tmp_path / "images"
    folder.mkdir()
    pics = [rng.integers(0, 256, size=(5, 6)) for _ in range(2)]
    for i, p in enumerate(pics):
        write_pgm(folder / f"im{i}.pgm", p)
    runs = golden_from_sources(path, tmp_path / "out", [str(folder)], [str(script)])
    assert [r.out_dir for r in runs] == [tmp_path / "out" / "0", tmp_path / "out" / "1"]
    for run, pic in zip(runs, pics):
        # resizeH/W/C come from the model's NCHW input; float64 from the script becomes the model's float32
        expected = ((pic[:3, :4].astype(np.float64) - 100.0) / 50.0).astype(np.float32).reshape(1, 1, 3, 4)
        files = load_written(run)
        np.testing.assert_array_equal(files[("img", 0)], expected)
        np.testing.assert_array_equal(files[("relu", 0)], np.maximum(expected, 0))
    # a list file with a relative path selects the second image only
    listing = tmp_path / "images.txt"
    listing.write_text("# one image per line\nimages/im1.pgm\n")
    runs = golden_from_sources(path, tmp_path / "list", [str(listing)], [f"img={script}"])
    assert len(runs) == 1 and runs[0].out_dir == tmp_path / "list"
    np.testing.assert_array_equal(load_written(runs[0])[("img", 0)], load_written(
        golden_from_sources(path, tmp_path / "one", [str(folder / "im1.pgm")], [str(script)])[0])[("img", 0)])


def test_multi_input_list_file(tmp_path):
    path = two_input_model(tmp_path)
    for k in range(2):
        np.save(tmp_path / f"i{k}.npy", np.full((1, 1, 2, 3), k + 1, np.float32))
        np.save(tmp_path / f"m{k}.npy", np.full((1, 3), 10 * (k + 1), np.int32))
    (tmp_path / "samples.txt").write_text("i0.npy, m0.npy\ni1.npy,m1.npy\n")
    runs = golden_from_sources(path, tmp_path / "out", [str(tmp_path / "samples.txt")])
    assert [float(load_written(r)[("mul", 0)].max()) for r in runs] == [10.0, 40.0]
    (tmp_path / "bad.txt").write_text("i0.npy\n")
    with pytest.raises(ConfigError, match="bad.txt: entry 1 has 1 comma-separated paths, the model has 2"):
        golden_from_sources(path, tmp_path / "bad", [str(tmp_path / "bad.txt")])


@pytest.mark.parametrize("script_text, pattern", [
    ("def load(path):\n    return path\n", r"pre.py: the preprocessing script has no get_image"),
    ("def get_image(path):\n    return 0\n", r"get_image must take an `nchw` argument"),
    ("def get_image(path, nchw=False):\n    raise IOError('cannot decode')\n", r"get_image\(.*\) failed.*decode"),
    ("def get_image(path, nchw=False):\n    return [['a']]\n", r"returned <U1, input 'img' needs float32"),
    ("import no_such_module_here\n", r"fails on import: ModuleNotFoundError"),
])
def test_preprocessing_script_errors(script_text, pattern, tmp_path):
    path = image_model(tmp_path)
    script = tmp_path / "pre.py"
    script.write_text(script_text)
    image = write_pgm(tmp_path / "a.pgm", np.zeros((3, 4)))
    with pytest.raises(ConfigError, match=pattern):
        golden_from_sources(path, tmp_path / "out", [str(image)], [str(script)])
    assert main(["golden", str(path), "-i", str(image), "-n", str(script), "-o", str(tmp_path / "cli")]) == 2


def test_image_without_script_is_an_error(tmp_path):
    path = image_model(tmp_path)
    image = write_pgm(tmp_path / "a.pgm", np.zeros((3, 4)))
    with pytest.raises(ConfigError, match="a.pgm: input 'img': give a .npy or .bin file, or an image with "
                                          "--preprocess"):
        golden_from_sources(path, tmp_path / "out", [str(image)])


def test_cli_golden(net, tmp_path, capsys):
    path, x = net
    np.save(tmp_path / "x.npy", x)
    assert main(["golden", str(path), "-i", str(tmp_path / "x.npy"), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "13 tensors of 11 ops in 1 run, final outputs equal to a plain run" in out
    records = read_golden_index(tmp_path / "out")
    np.testing.assert_array_equal(np.load(tmp_path / "out" / records[0].file), x)
    assert main(["golden", str(path), "-i", str(tmp_path / "x.npy"), "-o", str(tmp_path / "out")]) == 2
    assert "already holds ground truth" in capsys.readouterr().err
