"""#39, last part: the HTML report and `locate` on SigmaStar dumps (the fixed model's own error per layer), with the
original ONNX model given. A small net (tests/helpers/sigmastar_net.py) is simulated with a fault planted in `m`
(the Mul's output); the verdicts are checked against NumPy on the dumps themselves."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.dumps.sigmastar import TensorSpec, open_sigmastar, write_sigmastar_dump  # noqa: E402
from helpers.sigmastar_net import build_net  # noqa: E402


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    root = tmp_path_factory.mktemp("sigma_rl")
    model = build_net(str(root / "net.onnx"))
    common = [model, "--seed", "0", "--quiet"]
    assert main(["golden", *common, "--format", "sigmastar", "-o", str(root / "gt")]) == 0
    assert main(["simulate", "--target", "sigmastar", *common, "-o", str(root / "sim")]) == 0
    assert main(["simulate", "--target", "sigmastar", *common, "-o", str(root / "faulty"), "--fault", "m",
                 "--fault-scale", "2"]) == 0
    return root


def nchw(dump, name):
    t = next(t for t in dump.tensors if t.name == name)
    v = dump.values(t).astype(np.float64)
    return v.transpose(0, 3, 1, 2) if v.ndim == 4 else v


def cos(a, b):
    a, b = a.reshape(-1), b.reshape(-1)
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


def read_csv(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def page_data(path):
    text = path.read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S).group(1))
    header = re.findall(r'<th data-col="\d+">([^<]*)</th>', text)
    return header, data


def test_report_shows_the_sigmastar_rows_in_onnx_order(flow, capsys):
    out = flow / "report.html"
    fixed = str(flow / "faulty" / "fixed" / "sigma_outtensor_dump.bin")
    assert main(["report", "-l", fixed, "-r", str(flow / "gt"), "-o", str(out), "--locate",
                 str(flow / "net.onnx")]) == 0
    header, data = page_data(out)
    for column in ("MSE", "RelativeL1", "Jump", "Note", "CosineSimilarity"):
        assert column in header
    cells = [dict(zip(header, row)) for row in data["cells"]]
    assert [c["TensorIndex"] for c in cells] == ["c", "m", "r", "a", "y"]  # the ONNX graph's order
    assert [c["NPUDump"] for c in cells] == ["conv", "mul", "relu", "add", "sig"]  # each tensor's node
    assert [c["OpType"] for c in cells] == ["Conv", "Mul", "Relu", "Add", "Sigmoid"]
    assert cells[1]["Jump"] == "yes"
    dump, truth = open_sigmastar(fixed), open_sigmastar(flow / "gt" / "onnx_NHWC_outtensor_dump.bin")
    for c in cells:  # their numbers, recomputed
        a, b = nchw(dump, c["TensorIndex"]), nchw(truth, c["TensorIndex"])
        assert float(c["MSE"]) == pytest.approx(np.mean((a - b) ** 2), rel=1e-5, abs=6e-7)
        assert float(c["RelativeL1"]) == pytest.approx(np.abs(a - b).sum() / np.abs(b).sum(), abs=6e-7)
        assert float(c["CosineSimilarity"]) == pytest.approx(cos(a, b), abs=2e-6)
    assert data["verdict"]["first_below"]["name"] == "m"
    assert data["verdict"]["error_starts"]["op"] == "mul"
    assert all("hist" in rec for rec in data["rows"])  # histograms of every (worst) layer
    assert [rec.get("locate", {}).get("verdict") for rec in data["rows"]][1] == "origin"


def test_compare_html_keeps_their_console_lines(flow, capsys):
    fixed = str(flow / "faulty" / "fixed" / "sigma_outtensor_dump.bin")
    right = str(flow / "sim" / "float" / "sigma_outtensor_dump.bin")
    assert main(["compare", "-l", fixed, "-r", right]) == 0
    plain = capsys.readouterr().out
    assert main(["compare", "-l", fixed, "-r", right, "--html", str(flow / "c.html")]) == 0
    captured = capsys.readouterr()
    assert captured.out == plain  # their lines alone on standard output
    assert "report:" in captured.err and (flow / "c.html").is_file()
    header, data = page_data(flow / "c.html")
    cells = [dict(zip(header, row)) for row in data["cells"]]
    assert [c["NPUDump"] for c in cells][:2] == ["0.c.xx.output0", "1.m.xx.output0"]  # no model: the SDK's names
    assert main(["compare", "-l", fixed, "-r", right, "--fail-below", "0.9"]) == 1  # the gates apply


def test_locate_splits_the_error_as_numpy_does(flow, capsys):
    fixed = flow / "faulty" / "fixed" / "sigma_outtensor_dump.bin"
    assert main(["locate", str(flow / "net.onnx"), "-l", str(fixed), "-r", str(flow / "gt"), "-o",
                 str(flow / "loc"), "--quiet"]) == 0
    rows = {r["Output"]: r for r in read_csv(flow / "loc" / "locate.csv")}
    assert list(rows) == ["c", "m", "r", "a", "y"]
    dev, gt = open_sigmastar(fixed), open_sigmastar(flow / "gt" / "onnx_NHWC_outtensor_dump.bin")
    c, m, r, a, y = (nchw(dev, n) for n in "cmray")
    # own: the dumped output against the node replayed on the dump's own input
    assert float(rows["m"]["OwnCosine"]) == pytest.approx(cos(m, 0.7 * c), abs=1e-5)
    assert float(rows["r"]["OwnCosine"]) == pytest.approx(cos(r, np.maximum(m, 0)), abs=1e-5)
    assert float(rows["a"]["OwnCosine"]) == pytest.approx(cos(a, r + m), abs=1e-5)
    # inherited: the fed input against the benchmark; total: the output against the benchmark
    assert float(rows["r"]["InheritedCosine"]) == pytest.approx(cos(m, nchw(gt, "m")), abs=1e-5)
    assert float(rows["a"]["TotalCosine"]) == pytest.approx(cos(a, nchw(gt, "a")), abs=1e-5)
    assert cos(m, 0.7 * c) < 0.99 and cos(c, nchw(gt, "c")) > 0.99  # the fault is the Mul's own error
    assert rows["m"]["Verdict"] == "origin" and rows["c"]["Verdict"] == "ok"
    assert [rows[n]["Verdict"] for n in "ray"] == ["inherited"] * 3
    assert rows["c"]["Note"] == "model input x fed from the benchmark"


def test_locate_without_a_fault_claims_no_origin(flow, capsys):
    assert main(["locate", str(flow / "net.onnx"), "-l", str(flow / "sim" / "fixed" / "sigma_outtensor_dump.bin"),
                 "-r", str(flow / "gt"), "-o", str(flow / "loc0"), "--quiet"]) == 0
    rows = list(read_csv(flow / "loc0" / "locate.csv"))
    assert {r["Verdict"] for r in rows} == {"ok"}


def renamed(flow, tmp_path, names):
    dump = open_sigmastar(flow / "faulty" / "fixed" / "sigma_outtensor_dump.bin")
    specs = [TensorSpec(names.get(t.name, t.name), dump.values(t), t.op_type, t.op_index) for t in dump.tensors]
    return str(write_sigmastar_dump(tmp_path / "renamed.bin", specs))


def test_names_matching_no_onnx_tensor_exit_2_in_one_line(flow, tmp_path, capsys):
    left = renamed(flow, tmp_path, {n: f"sgs_{n}" for n in "cmray"})
    assert main(["locate", str(flow / "net.onnx"), "-l", left, "-r", str(flow / "gt"), "-o",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "none of its 5 tensor names" in err and "renamed.bin" in err
    assert not (tmp_path / "out").exists()
    assert main(["report", "-l", left, "-r", str(flow / "gt"), "-o", str(tmp_path / "r.html"), "--locate",
                 str(flow / "net.onnx")]) == 2
    assert not (tmp_path / "r.html").exists()


def test_one_renamed_tensor_is_not_replayed_with_the_reason(flow, tmp_path, capsys):
    left = renamed(flow, tmp_path, {"r": "relu_fused"})
    assert main(["locate", str(flow / "net.onnx"), "-l", left, "-r", str(flow / "gt"), "-o", str(tmp_path / "o"),
                 "--quiet"]) == 0
    rows = {r["Output"]: r for r in read_csv(tmp_path / "o" / "locate.csv")}
    assert rows["relu_fused"]["Verdict"] == "not replayed"
    assert "no node of the ONNX model produces it" in rows["relu_fused"]["Note"]
    # `add` reads r, which the dump no longer holds: replayed with relu, from m, and says so
    assert rows["a"]["Note"].startswith("replayed with relu")
    assert rows["m"]["Verdict"] == "origin"


def test_graph_json_is_refused_with_a_sigmastar_dump(flow, tmp_path, capsys):
    left = str(flow / "faulty" / "fixed" / "sigma_outtensor_dump.bin")
    assert main(["locate", str(flow / "net.onnx"), "-l", left, "-r", str(flow / "gt"), "-o", str(tmp_path / "o"),
                 "-f", "x.json"]) == 2
    assert main(["report", "-l", left, "-r", str(flow / "gt"), "-o", str(tmp_path / "r.html"), "-f", "x.json"]) == 2
    assert "-f is not available" in capsys.readouterr().err


def advice_of(flow, tmp_path, dump, name):
    out = tmp_path / f"{name}.html"
    assert main(["report", "-l", str(dump), "-r", str(flow / "gt"), "-o", str(out), "--json",
                 str(tmp_path / f"{name}.json"), "--quiet"]) == 0
    header, data = page_data(out)
    device = header.index("DataType")  # NPUDump's; GroundTruth's follows
    with open(tmp_path / f"{name}.json", encoding="utf-8") as f:
        advice = [(a["rule"], a["layer"]) for a in json.load(f)["runs"][0]["advice"]]
    return {row[header.index("TensorIndex")]: row[device] for row in data["cells"]}, advice


def test_the_int8_advice_follows_the_tensors_width(flow, tmp_path, capsys):
    """A row's device data type is the header's (SGS_S8: int8, SGS_S16: int16): the int8 rules advise a faulted
    int8 layer to run in 16 bit, and say nothing about a tensor that is 16-bit already."""
    sim = tmp_path / "sim"
    assert main(["simulate", "--target", "sigmastar", str(flow / "net.onnx"), "--seed", "0", "-o", str(sim),
                 "--fault", "m", "--fault-scale", "2", "--quant-level", "int8", "--quiet"]) == 0
    fixed = sim / "fixed" / "sigma_outtensor_dump.bin"
    types, advice = advice_of(flow, tmp_path, fixed, "int8")
    assert set(types.values()) == {"int8"} and ("int16-layer", "m") in advice
    # the same values, the layers from m on held in 16 bits (a mixed model): nothing to advise on them
    dump = open_sigmastar(fixed)
    specs = [TensorSpec(t.name, dump.values(t), t.op_type, t.op_index, scale=t.scale, zero_point=t.zero_point,
                        data_type="SGS_S8" if t.name == "c" else "SGS_S16") for t in dump.tensors]
    types, advice = advice_of(flow, tmp_path, write_sigmastar_dump(tmp_path / "mixed.bin", specs), "mixed")
    assert types == {"c": "int8", "m": "int16", "r": "int16", "a": "int16", "y": "int16"}
    assert not [a for a in advice if a[0] in ("int16-layer", "int8-outliers")]


def test_a_benchmark_tensor_that_does_not_fit_leaves_only_its_measures_out(flow, tmp_path, capsys):
    truth = open_sigmastar(flow / "gt" / "onnx_NHWC_outtensor_dump.bin")
    specs = [TensorSpec(t.name, np.zeros((1, 5), np.float32) if t.name == "r" else truth.values(t), t.op_type,
                        t.op_index) for t in truth.tensors]
    bench = write_sigmastar_dump(tmp_path / "bench.bin", specs)
    assert main(["locate", str(flow / "net.onnx"), "-l", str(flow / "faulty" / "fixed" / "sigma_outtensor_dump.bin"),
                 "-r", str(bench), "-o", str(tmp_path / "o"), "--quiet"]) == 0
    rows = {r["Output"]: r for r in read_csv(tmp_path / "o" / "locate.csv")}
    assert [rows[n]["Verdict"] for n in "cmray"] == ["ok", "origin", "inherited", "inherited", "inherited"]
    assert rows["r"]["TotalCosine"] == "NaN" and rows["r"]["Note"].startswith("total not measured: ")
    assert rows["a"]["Note"].startswith("input r not measured against the benchmark: ")
    assert float(rows["a"]["InheritedCosine"]) < 0.99  # from its other input, m


def test_a_shape_that_is_no_layout_of_the_onnx_tensor_is_not_replayed(flow, tmp_path, capsys):
    dump = open_sigmastar(flow / "faulty" / "fixed" / "sigma_outtensor_dump.bin")
    specs = [TensorSpec(t.name, dump.values(t).reshape(1, 6, 24) if t.name == "y" else dump.values(t), t.op_type,
                        t.op_index) for t in dump.tensors]
    left = write_sigmastar_dump(tmp_path / "d.bin", specs)
    assert main(["locate", str(flow / "net.onnx"), "-l", str(left), "-r", str(flow / "gt"), "-o", str(tmp_path / "o"),
                 "--quiet"]) == 0
    rows = {r["Output"]: r for r in read_csv(tmp_path / "o" / "locate.csv")}
    assert rows["y"]["Verdict"] == "not replayed" and "not replayed rather than guessed" in rows["y"]["Note"]
    assert rows["m"]["Verdict"] == "origin"
