"""dumpcmp locate, end to end through `dumpcmp simulate` as the device: planted faults (fused and unfused ops,
fp16 and int8) are named exactly, a healthy fp16 network has no origin and its drift is reported, the demo's bad
layer is explained, and the numbers agree with `dumpcmp compare` and with each other.

The networks are generated with onnx.helper (tests/helpers/locate_nets.py: Conv+BN+ReLU, residual blocks with SiLU, an
attention-like MatMul/Softmax head, a Gemm classifier); no real network from a wheel is used here."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from helpers.locate_nets import build_net, net_input, plant_fault, simulated_net  # noqa: E402

import dumpcmp  # noqa: E402
from dumpcmp.cli import main  # noqa: E402
from dumpcmp.debug.locate import LocateResult  # noqa: E402


def _setup(d: Path, precision: str, *, attention: bool = True, weight: str | None = None,
           dump_mode: str = "all") -> dict:
    return simulated_net(d, precision, attention=attention, weight=weight, dump_mode=dump_mode)


def _locate(s: dict, **kw) -> LocateResult:
    return dumpcmp.locate(s["model"], s["dump"], s["gt"], fusion_json=s["json"], **kw)


@pytest.mark.parametrize("precision,attention,weight,op", [
    ("fp16", True, "b0b_w", "b0b_convb0b_bnb0b_relu"),     # fused Conv+BN+ReLU
    ("fp16", True, "wq", "att_q"),                          # unfused MatMul in the attention head
    ("int8", False, "b1a_w", "b1a_convb1a_bn"),             # fused Conv+BN in an int8 chain
    ("int8", False, "fc_w", "fc"),                          # unfused Gemm in an int8 chain
])
def test_a_planted_fault_is_named_exactly(tmp_path: Path, precision: str, attention: bool, weight: str,
                                          op: str) -> None:
    s = _setup(tmp_path, precision, attention=attention, weight=weight)
    r = _locate(s)
    origin = r.origin
    assert origin is not None and origin.op == op
    assert origin.own.cosine < 0.99 and origin.inherited is not None and origin.inherited.cosine > 0.999
    assert [x.op for x in r.rows if x.verdict in ("origin", "adds")] == [op]
    position = r.rows.index(origin)
    noise = 2e-3 if precision == "fp16" else 0.03  # relative RMSE of fp16 rounding / int8 quantization
    for row in r.rows[:position]:
        if row.own is not None:
            assert row.verdict == "ok" and row.own.rrmse < noise, row.op
    downstream = [row for row in r.rows[position + 1:] if row.own is not None]
    assert downstream
    for row in downstream:
        assert row.own.rrmse < noise, row.op
    # the error arrived downstream: the op that reads the faulty output inherits it
    assert any(row.verdict == "inherited" and row.inherited.cosine < 0.999 for row in downstream)
    if precision == "int8":
        assert origin.quantized and origin.compute is not None and "the op itself computes differently" in origin.note


def test_a_healthy_fp16_network_has_no_origin_and_its_drift_is_reported(tmp_path: Path) -> None:
    s = _setup(tmp_path, "fp16")
    r = _locate(s)
    assert r.origin is None
    assert {row.verdict for row in r.rows} <= {"ok", "inherited"}
    assert all(row.own.rrmse < 2e-3 for row in r.rows)
    text = r.statement()
    assert text.startswith("no single operator adds error beyond the threshold") and "accumulates" in text
    last = [row for row in r.rows if row.total is not None][-1]
    assert f"{last.total.rrmse:.6f} at {last.op}" in text


def test_numbers_agree_with_compare_and_with_each_other(tmp_path: Path) -> None:
    s = _setup(tmp_path, "fp16", weight="b0b_w")
    r = _locate(s, algorithms="all")
    cmp = dumpcmp.compare(s["dump"], s["gt"], fusion_json=s["json"])
    by_tensor = {row.tensor_index: row for row in cmp.rows if row.result is not None}
    rows = {row.op: row for row in r.rows}
    for row in r.rows:
        ref = by_tensor.get(f"{row.op}:output:0")
        if row.total is not None and ref is not None:
            assert row.total.cosine == pytest.approx(ref.cosine, abs=2e-6), row.op
            assert row.total.value(7) == pytest.approx(ref.value(7), rel=1e-4, abs=1e-7), row.op
    # what an op inherits is what its producer handed over: the producer's total error
    silu = rows["b0_sig"]  # reads b0a's fused output only
    assert silu.inherited.cosine == pytest.approx(rows["b0a_convb0a_bn"].total.cosine, abs=1e-6)
    # own of the input Cast is the fp16 rounding of the input, by NumPy
    x = net_input().astype(np.float64)
    h = x.astype(np.float16).astype(np.float64)
    cos = float((h * x).sum() / math.sqrt((h * h).sum() * (x * x).sum()))
    assert rows["trans_Cast_0"].own.cosine == pytest.approx(cos, abs=1e-7)
    rmse = math.sqrt(float(((h - x) ** 2).mean()))
    assert rows["trans_Cast_0"].own.rrmse == pytest.approx(rmse / math.sqrt(float((x * x).mean())), rel=1e-5)
    # all ten metrics for own
    assert set(r.to_dict()["rows"][0]["own"]) >= {"KullbackLeiblerDivergence", "MeanRelativeError", "RelativeRMSE"}


def test_bounded_batches_give_the_same_rows(tmp_path: Path) -> None:
    s = _setup(tmp_path, "int8", attention=False, weight="fc_w")
    big = _locate(s)
    small = _locate(s, batch_bytes=1)  # one region per onnxruntime session
    assert [(x.op, x.verdict, x.note) for x in big.rows] == [(x.op, x.verdict, x.note) for x in small.rows]
    for a, b in zip(big.rows, small.rows):
        if a.own is not None:
            assert a.own.cosine == pytest.approx(b.own.cosine, abs=1e-7)


def test_operators_that_cannot_be_replayed_say_why_and_the_run_goes_on(tmp_path: Path) -> None:
    s = _setup(tmp_path, "fp16")
    # one dump file cut short: that op's row says so, every other op is replayed
    victim = next(s["dump"].rglob("Sigmoid.b0_sig.*"))
    victim.write_bytes(victim.read_bytes()[:100])
    r = _locate(s)
    bad = [row for row in r.rows if row.verdict == "not replayed"]
    assert [row.op for row in bad] == ["b0_sig"] and bad[0].note
    assert sum(1 for row in r.rows if row.own is not None) == len(r.rows) - 1
    # outputs only (dump_mode output): inputs come from the producers' dumped outputs (test_locate_output_only.py)
    o = _setup(tmp_path / "out", "fp16", dump_mode="output")
    r = _locate(o)
    assert all(row.own is not None and "inputs:" in row.note for row in r.rows)


def test_cli_writes_locate_csv_json_and_compare_columns(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    s = _setup(tmp_path, "fp16", weight="wq")
    out = tmp_path / "loc"
    args = [str(s["model"]), "-l", str(s["dump"]), "-r", str(s["gt"]), "-f", str(s["json"]), "-o", str(out),
            "--json", str(tmp_path / "loc.json"), "--quiet"]
    assert main(["locate", *args]) == 0
    with open(out / "locate.csv", newline="") as f:
        table = list(csv.DictReader(f))
    origin = [row for row in table if row["Verdict"] == "origin"]
    assert [row["NPUOp"] for row in origin] == ["att_q"] and origin[0]["Originals"] == "att_q"
    assert {"OwnCosine", "OwnRelRMSE", "InheritedCosine", "TotalCosine", "TotalRMSE", "Note"} <= set(table[0])
    doc = json.loads((tmp_path / "loc.json").read_text())
    assert doc[0]["origin"] == "att_q" and doc[0]["ranking"][0] == "att_q"
    assert main(["locate", *args]) == 2  # never replaces a result without --force
    assert "exists" in capsys.readouterr().err
    assert main(["locate", *args[:-3], "--quiet", "--force"]) == 0
    # compare --locate: the original's columns untouched, the locate columns after them
    plain, extended = tmp_path / "plain.csv", tmp_path / "ext.csv"
    base = ["compare", "-l", str(s["dump"]), "-r", str(s["gt"]), "-f", str(s["json"]), "--quiet"]
    assert main([*base, "-o", str(plain)]) == 0
    assert main([*base, "-o", str(extended), "--locate", str(s["model"])]) == 0
    p_rows = list(csv.reader(plain.read_text().splitlines()))
    e_rows = list(csv.reader(extended.read_text().splitlines()))
    n = len(p_rows[0])
    assert e_rows[0][n:] == ["OwnCosine", "OwnRelRMSE", "InheritedCosine", "InheritedRelRMSE", "Verdict"]
    assert [row[:n] for row in e_rows] == p_rows
    att = next(row for row in e_rows if row[7] == "att_q:output:0")
    assert att[-1] == "origin" and float(att[n]) < 0.99


def test_the_demo_explains_its_bad_layer(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from dumpcmp.cli.demo import run_demo

    result = run_demo(tmp_path / "demo")
    text = capsys.readouterr().out
    assert result.origin == "fc"
    assert "the error starts at fc (MatMulV2)" in text
    assert "flat_out_QuantizeLinear -> flat_out_DequantizeLinear -> fc" in text
    assert "the error is the int8 quantization of its input" in text
    assert (tmp_path / "demo" / "locate.csv").is_file()


def _ascend_int8_chain(d: Path, *, deq_error: float = 1.0) -> dict:
    """The device's own int8 form, written by hand (the simulator writes quantize -> dequantize -> op): a Gemm as
    AscendQuant (fp16 in, int8 out) -> MatMulV2 (int8 x int8 weights -> int32) -> AscendDequant (int32 -> fp16),
    with a graph JSON in the compiler's schema. `deq_error` scales the dequantization (1.0 = right)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from helpers.graphjson import desc, document, list_s, op, s, write

    from dumpcmp.dumps.dump import TensorData, write_dump
    from dumpcmp.onnx.golden import dump_golden
    from dumpcmp.dumps.naming import build_device_dump_name

    rng = np.random.default_rng(5)
    w = (rng.standard_normal((8, 16)) / 4).astype(np.float32)
    bias = rng.normal(0, 0.1, 8).astype(np.float32)
    x = rng.standard_normal((1, 16)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "fc_w", "fc_b"], ["y"], name="fc", transB=1)], "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        initializer=[numpy_helper.from_array(w, "fc_w"), numpy_helper.from_array(bias, "fc_b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    d.mkdir(parents=True, exist_ok=True)
    onnx.save(model, d / "chain.onnx")
    dump_golden(d / "chain.onnx", {"x": x}, d / "gt")

    x16 = x.astype(np.float16)
    sx, sw = float(np.abs(x).max()) / 127, float(np.abs(w).max()) / 127
    q = np.clip(np.round(x16.astype(np.float32) / sx), -127, 127).astype(np.int8)
    wq = np.clip(np.round(w / sw), -127, 127).astype(np.int8)
    acc = q.astype(np.int32) @ wq.T.astype(np.int32)
    y16 = (acc.astype(np.float32) * sx * sw * deq_error + bias).astype(np.float16)

    def nd(dtype: str, shape: tuple[int, ...], origin: str | None = None) -> dict:
        return desc(dtype, "ND", shape, origin_name=origin, origin_index=0 if origin else None,
                    ge_origin_format="ND", origin_shape=shape)

    doc = document(
        op("x", "Data", 0, outputs=[nd("DT_FLOAT", (1, 16), "x")]),
        op("trans_Cast_0", "Cast", 1, ["x:0"], originals=[], outputs=[nd("DT_FLOAT16", (1, 16), "x")]),
        op("fc_quant", "AscendQuant", 2, ["trans_Cast_0:0"], originals=["fc_quant_layer"],
           outputs=[nd("DT_INT8", (1, 16))], input_descs=[nd("DT_FLOAT16", (1, 16))]),
        op("fc_w", "Const", 3, outputs=[nd("DT_INT8", (8, 16))]),
        op("fc", "MatMulV2", 4, ["fc_quant:0", "fc_w:0"], originals=["fc"], outputs=[nd("DT_INT32", (1, 8))],
           input_descs=[nd("DT_INT8", (1, 16)), nd("DT_INT8", (8, 16))]),
        op("fc_dequant", "AscendDequant", 5, ["fc:0"], originals=["fc"], outputs=[nd("DT_FLOAT16", (1, 8), "fc")],
           input_descs=[nd("DT_INT32", (1, 8))]),
        model="chain")
    doc["graph"][0]["op"][4]["attr"].append(list_s("_datadump_original_op_names", ["fc"]))
    doc["graph"][0]["op"][2]["attr"].append(s("_onnx_op_type", "QuantizeLinear"))
    write(d / "chain.json", doc)
    dump = d / "dump"
    dump.mkdir()
    tensors = {
        ("Cast", "trans_Cast_0"): ([x], [x16]),
        ("AscendQuant", "fc_quant"): ([x16], [q]),
        ("MatMulV2", "fc"): ([q, wq], [acc]),
        ("AscendDequant", "fc_dequant"): ([acc], [y16]),
    }
    for task, ((op_type, name), (ins, outs)) in enumerate(tensors.items()):
        stamp = 1700000000000000 + task
        write_dump(dump / build_device_dump_name(op_type, name, task, stamp), op_name=name, dump_time=stamp,
                   inputs=[TensorData(a) for a in ins], outputs=[TensorData(a) for a in outs])
    replay = x16.astype(np.float32) @ w.T + bias
    return {"model": d / "chain.onnx", "dump": dump, "gt": d / "gt", "json": d / "chain.json",
            "device": y16.astype(np.float64), "replay": replay.astype(np.float64)}


@pytest.mark.parametrize("deq_error", [1.0, 1.25])
def test_the_devices_quantize_integer_op_dequantize_chain_is_one_unit(tmp_path: Path, deq_error: float) -> None:
    s = _ascend_int8_chain(tmp_path, deq_error=deq_error)
    r = _locate(s)
    rows = {row.op: row for row in r.rows}
    unit = rows["fc_dequant"]
    assert unit.members == ("fc_quant", "fc", "fc_dequant") and unit.region.nodes == ("fc",)
    assert unit.region.inputs == ("x",)  # fed the float tensor before quantization; the weight is the original
    assert rows["fc"].verdict == "not replayed" and "replayed as part of fc_dequant" in rows["fc"].note
    assert rows["fc_quant"].verdict == "not replayed"
    if deq_error == 1.0:
        assert r.origin is None and unit.verdict == "ok" and unit.own.rrmse < 0.03
    else:
        assert r.origin is unit and unit.own.rrmse > 0.15
    # own of the unit is the device output against the fp32 Gemm on the device's fp16 input, by NumPy
    dev, ref = s["device"].ravel(), s["replay"].ravel()
    cos = float(dev @ ref / math.sqrt((dev @ dev) * (ref @ ref)))
    assert unit.own.cosine == pytest.approx(cos, abs=1e-6)
    assert unit.own.rrmse == pytest.approx(math.sqrt(((dev - ref) ** 2).mean() / (ref ** 2).mean()), rel=1e-4)


def test_an_fp16_overflow_is_an_origin_and_said_so(tmp_path: Path) -> None:
    from dumpcmp.onnx.golden import dump_golden
    from dumpcmp.device.simulate import simulate

    model = build_net(tmp_path / "net.onnx", attention=False)
    # fp32 holds it, fp16 cannot: the fused op's own output (Conv with the BatchNormalization folded in fp32, then
    # ReLU) reaches about 1.6e5, beyond fp16's 65504, while its folded weights (up to 2.3e4) still fit; a smaller
    # fault (2e4: outputs up to 6.3e4) would only overflow the unfused Conv's intermediate, which the device never
    # holds, and first show at the next op
    big = plant_fault(model, tmp_path / "big.onnx", "b0b_w", scale=5e4, noise=0.0)
    x = net_input()
    dump_golden(big, {"x": x}, tmp_path / "gt")
    sim = simulate(big, tmp_path / "dump", precision="fp16", samples=[{"x": x}], dump_mode="all", model_name="net")
    r = dumpcmp.locate(big, tmp_path / "dump", tmp_path / "gt", fusion_json=sim.json_path)
    assert r.origin is not None and r.origin.op == "b0b_convb0b_bnb0b_relu" and r.origin.own.broken
    assert "an overflow" in r.statement() and r.ranking(1)[0] is r.origin


def test_original_casts_and_compile_time_constants_are_replayed(tmp_path: Path) -> None:
    """As in PP-OCR's classifier head: Shape -> Cast -> Slice -> Cast, concatenated with a Cast of a Constant,
    feeds a Reshape. The original Casts are ops of their own (not the compiler's: replayed as Casts), an op fed
    straight from one is fed that Cast's output, and the Cast of a Constant (folded at compile time, never run on
    the device) travels inside its consumer's region like a weight."""
    import onnx
    from onnx import TensorProto, helper

    from dumpcmp.onnx.golden import dump_golden
    from dumpcmp.device.simulate import simulate

    def const(name: str, value: list[int]) -> onnx.NodeProto:
        return helper.make_node("Constant", [], [name], name=name,
                                value=helper.make_tensor(name, TensorProto.INT64, [len(value)], value))

    nodes = [
        helper.make_node("Relu", ["x"], ["h"], name="relu"),
        helper.make_node("Shape", ["h"], ["shp"], name="shape"),
        helper.make_node("Cast", ["shp"], ["shp32"], name="cast_shape", to=TensorProto.INT32),
        const("starts", [0]), const("ends", [1]),
        helper.make_node("Slice", ["shp32", "starts", "ends"], ["batch"], name="slice"),
        helper.make_node("Cast", ["batch"], ["batch64"], name="cast_batch", to=TensorProto.INT64),
        helper.make_node("Constant", [], ["minus1"], name="minus1",
                         value=helper.make_tensor("minus1", TensorProto.INT32, [1], [-1])),
        helper.make_node("Cast", ["minus1"], ["minus1_64"], name="cast_const", to=TensorProto.INT64),
        helper.make_node("Concat", ["batch64", "minus1_64"], ["new_shape"], name="concat", axis=0),
        helper.make_node("Reshape", ["h", "new_shape"], ["flat"], name="reshape"),
        helper.make_node("Sigmoid", ["flat"], ["y"], name="sig"),
    ]
    graph = helper.make_graph(nodes, "shapes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 36])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = tmp_path / "shapes.onnx"
    onnx.save(model, path)
    x = np.random.default_rng(0).standard_normal((1, 4, 3, 3)).astype(np.float32)
    dump_golden(path, {"x": x}, tmp_path / "gt")
    sim = simulate(path, tmp_path / "dump", precision="fp16", samples=[{"x": x}], dump_mode="all", model_name="m")
    r = dumpcmp.locate(path, tmp_path / "dump", tmp_path / "gt", fusion_json=sim.json_path)
    rows = {row.op: row for row in r.rows}
    assert [row.op for row in r.rows if row.verdict == "not replayed"] == []
    assert r.origin is None
    assert rows["cast_shape"].region.nodes == ("cast_shape",) and rows["cast_shape"].output == "shp32"
    assert rows["slice"].region.inputs == ("shp32",)
    assert rows["concat"].region.inputs == ("batch64",) and "cast_const" in rows["concat"].region.nodes
    assert "cast_const" not in rows  # folded: no device op runs it
    for op in ("shape", "cast_shape", "slice", "cast_batch", "concat"):
        assert rows[op].own.cosine == pytest.approx(1.0) and rows[op].own.value(1) == 0, op
