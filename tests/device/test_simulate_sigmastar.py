"""`dumpcmp simulate --target sigmastar`: the float dump is onnxruntime's own run of the model (4-D in NHWC), the
fixed dump holds values on each tensor's quantisation grid with the scale and zero point of min/max calibration,
and the fixed model is run quantised: each layer computed from the previous layer's quantised values (checked with
NumPy on an elementwise chain), so error accumulates; widths follow --quant-level; a planted fault shows at its
tensor; the folder is published whole, never over an existing one without --force."""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.dumps.sigmastar import open_sigmastar, read_min_max  # noqa: E402
from dumpcmp.support.files import is_temp_name  # noqa: E402
from helpers.sigmastar_net import build_net  # noqa: E402


def reference(path, x):
    """Every node output of the float model, by onnxruntime directly."""
    model = onnx.load(path)
    names = ["c", "m", "r", "a"]
    for n in names:
        model.graph.output.add().name = n
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # each node's own result
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    outs = sess.run(names + ["y"], {"x": x})
    return dict(zip(names + ["y"], outs))


def requant(v, s, z, bits):
    qmin, qmax = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    q = np.clip(np.round(v.astype(np.float32) / np.float32(s)) + z, qmin, qmax)
    return ((q - z) * s).astype(np.float32)


def nchw(a):
    return a.transpose(0, 3, 1, 2) if a.ndim == 4 else a


@pytest.fixture
def net(tmp_path):
    x = np.random.default_rng(1).normal(size=(1, 3, 6, 6)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    return build_net(tmp_path / "net.onnx"), tmp_path / "x.npy", x


def run_sim(tmp_path, model, xfile, *extra, out="sim"):
    return main(["simulate", "--target", "sigmastar", str(model), "-i", str(xfile), "-o", str(tmp_path / out),
                 "--quiet", *extra])


def test_float_and_fixed_dumps(tmp_path, net, capsys):
    model, xfile, x = net
    assert run_sim(tmp_path, model, xfile) == 0
    ref = reference(model, x)
    flt = open_sigmastar(tmp_path / "sim/float/sigma_outtensor_dump.bin")
    fix = open_sigmastar(tmp_path / "sim/fixed/sigma_outtensor_dump.bin")
    assert [t.name for t in flt.tensors] == ["c", "m", "r", "a", "y"]  # float tensors only, node order
    assert [t.name for t in fix.tensors] == ["c", "m", "r", "a", "y"]
    assert [t.op_type for t in flt.tensors] == ["Conv", "Mul", "Relu", "Add", "Sigmoid"]
    assert flt.tensors[0].shape == (1, 6, 6, 4)  # NHWC
    for t in flt.tensors:
        np.testing.assert_array_equal(nchw(flt.values(t)), ref[t.name])

    # calibration: tensor_min_max.txt holds the float run's min/max (the input too); the headers' s/z follow
    mm = read_min_max(tmp_path / "sim/tensor_min_max.txt")
    assert set(mm) == {"x", "c", "m", "r", "a", "y"}
    for name, v in list(ref.items()) + [("x", x)]:
        assert mm[name] == pytest.approx((float(v.min()), float(v.max())), abs=1e-6)
    widths = {t.name: t.data_type for t in fix.tensors}
    assert widths == {"c": "SGS_S16", "m": "SGS_S16", "r": "SGS_S16", "a": "SGS_S16", "y": "SGS_S16"}
    for t in fix.tensors:
        lo, hi = min(mm[t.name][0], 0), max(mm[t.name][1], 0)
        assert t.scale == pytest.approx((hi - lo) / 65535, rel=1e-5)
        v = nchw(fix.values(t)).astype(np.float64)
        q = v / t.scale + t.zero_point  # on the grid: integers in range
        np.testing.assert_allclose(q, np.round(q), atol=2e-2)
        assert q.min() >= -32768.5 and q.max() <= 32767.5

    # run quantised: each layer from the previous layer's fixed values (x is 8-bit: a Conv input in "mixed")
    got = {t.name: (nchw(fix.values(t)), t.scale, t.zero_point) for t in fix.tensors}

    def check(name, value):
        _, s, z = got[name]
        np.testing.assert_allclose(got[name][0], requant(value, s, z, 16), atol=s * 1.01)

    check("m", got["c"][0] * np.float32(0.7))
    check("r", np.maximum(got["m"][0], 0))
    check("a", got["r"][0] + got["m"][0])
    check("y", 1 / (1 + np.exp(-got["a"][0])))
    # and the error is the fixed model's own: the input's 8-bit rounding shows in the first Conv
    assert not np.array_equal(got["c"][0], ref["c"])
    assert 0 < np.abs(got["c"][0] - ref["c"]).max() < 0.2
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("level,expected", [("int16", "SGS_S16"), ("int8", "SGS_S8")])
def test_quant_levels(tmp_path, net, level, expected):
    model, xfile, x = net
    assert run_sim(tmp_path, model, xfile, "--quant-level", level) == 0
    fix = open_sigmastar(tmp_path / "sim/fixed/sigma_outtensor_dump.bin")
    assert {t.data_type for t in fix.tensors} == {expected}
    ref = reference(model, x)
    err = {t.name: float(np.abs(nchw(fix.values(t)) - ref[t.name]).max()) for t in fix.tensors}
    assert max(err.values()) > 0
    if level == "int8":  # 8-bit steps are 256 times coarser
        assert err["c"] > 1e-3


def test_mixed_widths_follow_the_consumers(tmp_path):
    """mixed: the input of a Conv is 8-bit (checked through the first Conv output's error), others 16-bit."""
    rng = np.random.default_rng(2)
    w1 = numpy_helper.from_array(rng.normal(size=(2, 2, 1, 1)).astype(np.float32), "w1")
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w1"], ["c"], name="conv"),
             helper.make_node("Sigmoid", ["c"], ["y"], name="sig")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w1])
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    assert main(["simulate", "--target", "sigmastar", str(model), "--seed", "3", "-o", str(tmp_path / "s"),
                 "--quiet"]) == 0
    fix = open_sigmastar(tmp_path / "s/fixed/sigma_outtensor_dump.bin")
    assert {t.name: t.data_type for t in fix.tensors} == {"r": "SGS_S8", "c": "SGS_S16", "y": "SGS_S16"}


def test_planted_fault_shows_at_its_tensor(tmp_path, net):
    model, xfile, x = net
    assert run_sim(tmp_path, model, xfile, "--fault", "r") == 0
    assert run_sim(tmp_path, model, xfile, out="clean") == 0
    ref = reference(model, x)

    def cos(a, b):
        a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    faulty = open_sigmastar(tmp_path / "sim/fixed/sigma_outtensor_dump.bin")
    clean = open_sigmastar(tmp_path / "clean/fixed/sigma_outtensor_dump.bin")
    f = {t.name: nchw(faulty.values(t)) for t in faulty.tensors}
    c = {t.name: nchw(clean.values(t)) for t in clean.tensors}
    np.testing.assert_array_equal(f["c"], c["c"])  # before the fault: the same
    np.testing.assert_array_equal(f["m"], c["m"])
    assert cos(c["r"], ref["r"]) > 0.9999
    assert cos(f["r"], ref["r"]) < 0.98
    assert cos(f["a"], ref["a"]) < 0.99  # inherited downstream
    # the float dump is the model's, untouched by the fault
    flt = open_sigmastar(tmp_path / "sim/float/sigma_outtensor_dump.bin")
    np.testing.assert_array_equal(nchw(flt.values(flt.tensors[2])), ref["r"])


def test_never_over_an_existing_folder(tmp_path, net, capsys):
    model, xfile, _ = net
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "mine.txt").write_text("keep")
    assert run_sim(tmp_path, model, xfile) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sim" in err and "exists" in err, err
    assert os.listdir(tmp_path / "sim") == ["mine.txt"]
    assert not [n for n in os.listdir(tmp_path) if is_temp_name(n)]
    assert run_sim(tmp_path, model, xfile, "--force") == 0
    assert sorted(os.listdir(tmp_path / "sim")) == ["fixed", "float", "tensor_min_max.txt"]


@pytest.mark.parametrize("extra,words", [
    (["--fault", "nope"], "--fault 'nope'"),
    (["--fault", "s"], "--fault 's'"),            # an integer tensor: not quantised
    (["--precision", "int8"], "--precision"),
    (["--dump-mode", "all"], "--dump-mode"),
    (["--fault-scale", "-1"], "fault scale"),
])
def test_bad_options_exit_2(tmp_path, net, capsys, extra, words):
    model, xfile, _ = net
    assert run_sim(tmp_path, model, xfile, *extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("dumpcmp: error:") and words in err and "Traceback" not in err, err
    assert not (tmp_path / "sim").exists()


def test_old_opset_and_several_samples_exit_2(tmp_path, net, capsys):
    model, xfile, x = net
    old = build_net(tmp_path / "old.onnx", opset=10)
    assert main(["simulate", "--target", "sigmastar", str(old), "-i", str(xfile), "-o", str(tmp_path / "o")]) == 2
    assert "opset 10" in capsys.readouterr().err
    folder = tmp_path / "xs"
    folder.mkdir()
    for k in range(2):
        np.save(folder / f"{k}.npy", x)
    assert run_sim(tmp_path, model, folder) == 2
    assert "2 samples" in capsys.readouterr().err
    assert main(["simulate", "--target", "sigmastar", str(model), "-i", str(xfile)]) == 2
    assert "-o DIR" in capsys.readouterr().err
    assert main(["simulate", str(model), "-i", str(xfile), "-o", str(tmp_path / "n"), "--fault", "r"]) == 2
    assert "--target sigmastar" in capsys.readouterr().err


def test_names_that_look_like_ours_and_line_breaks(tmp_path, capsys):
    """A model holding the names the fixed model adds (`t::sgs_dq`) and a name with a line break: no collision, a
    readable dump, and the same rows against golden's dump."""
    nodes = [helper.make_node("Relu", ["x"], ["a\nb"], name="r"),
             helper.make_node("Neg", ["a\nb"], ["a\nb::sgs_dq"], name="n"),
             helper.make_node("Abs", ["a\nb::sgs_dq"], ["x::sgs_q"], name="x::sgs_div")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2])],
                              [helper.make_tensor_value_info("x::sgs_q", TensorProto.FLOAT, None)])
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    assert main(["simulate", "--target", "sigmastar", str(model), "--seed", "0", "-o", str(tmp_path / "s"),
                 "--quiet"]) == 0
    fix = open_sigmastar(tmp_path / "s/fixed/sigma_outtensor_dump.bin")
    assert [t.name for t in fix.tensors] == ["a b", "a b::sgs_dq", "x::sgs_q"]
    assert set(read_min_max(tmp_path / "s/tensor_min_max.txt")) == {"x", "a b", "a b::sgs_dq", "x::sgs_q"}
    x = np.random.default_rng([0, 0]).standard_normal((1, 2, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(nchw(fix.values(fix.tensors[2])), np.abs(np.maximum(x, 0)), atol=1e-4)


def test_a_model_without_float32_activations(tmp_path, capsys):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)])
    model = tmp_path / "h.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    assert main(["simulate", "--target", "sigmastar", str(model), "--seed", "0", "-o", str(tmp_path / "s")]) == 2
    assert "no float32 activation" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_integer_fixed_dump_reads_as_the_dequantised_one(tmp_path, net):
    """--no-dequant-fixed: isFloat 0 and the integers, which the reader dequantises with the header's s and z to
    exactly the values of the dequantFixed dump (the scale is written in full, not cut to six decimals)."""
    model, xfile, _ = net
    assert run_sim(tmp_path, model, xfile) == 0
    assert run_sim(tmp_path, model, xfile, "--no-dequant-fixed", "--quant-level", "int8", out="ints") == 0
    assert run_sim(tmp_path, model, xfile, "--quant-level", "int8", out="reals") == 0
    a = open_sigmastar(tmp_path / "ints/fixed/sigma_outtensor_dump.bin")
    b = open_sigmastar(tmp_path / "reals/fixed/sigma_outtensor_dump.bin")
    assert not a.is_float and b.is_float
    for ta, tb in zip(a.tensors, b.tensors):
        assert (ta.name, ta.scale, ta.zero_point, ta.data_type) == (tb.name, tb.scale, tb.zero_point, "SGS_S8")
        raw = a.raw(ta)
        assert raw.dtype == np.int8 and raw.size == np.prod(ta.shape)
        np.testing.assert_array_equal(a.values(ta), b.values(tb))
    float_dump = (tmp_path / "ints/float/sigma_outtensor_dump.bin").read_bytes()
    assert float_dump == (tmp_path / "reals/float/sigma_outtensor_dump.bin").read_bytes()


def test_parent_folders_are_made_and_an_existing_output_refused_first(tmp_path, net, capsys, monkeypatch):
    """`simulate` makes its dump path's parents; --target sigmastar refused a missing parent only after the whole
    run. An existing output is refused before any work (the model is not even loaded)."""
    model, xfile, _ = net
    assert run_sim(tmp_path, model, xfile, out="a/b/sim") == 0
    assert sorted(os.listdir(tmp_path / "a/b/sim")) == ["fixed", "float", "tensor_min_max.txt"]
    import dumpcmp.onnx.model as onnx_model

    def no_load(*a, **k):
        raise AssertionError("loaded")

    monkeypatch.setattr(onnx_model, "load_model_with_weights", no_load)
    assert run_sim(tmp_path, model, xfile, out="a/b/sim") == 2
    assert "already exists" in capsys.readouterr().err
