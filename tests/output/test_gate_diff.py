"""Gates and diff: exit code 0 pass, 1 fail with the failing layers listed, 2 bad input; `--json`."""

from __future__ import annotations

import csv
import json

import numpy as np

from dumpcmp.cli import main

from helpers.reportmodel import Chain


def noisy(gt, rng):
    return gt + rng.standard_normal(gt.shape).astype(np.float32)


# a quantize op in the run makes it an int8 device's: the int8 rules (int16-layer) apply
INT8 = ["Conv2D", "Relu", "Conv2D", "AscendQuant"]


def test_fail_below_exit_codes(tmp_path, rng, capsys):
    c = Chain(tmp_path, rng, 4, plants={2: noisy})
    base = ["compare", *c.args(), "--quiet"]
    assert main(base + ["--fail-below", "0.5"]) == 0
    assert "gate: PASS" in capsys.readouterr().err  # the table has standard output
    assert main(base + ["--fail-below", "0.9"]) == 1
    err = capsys.readouterr().err
    # the Index the result table prints: op2 is the graph's fusion unit 3 (data, op0, op1, op2)
    assert "gate: FAIL (1 failing)" in err and "#3 op2:output:0" in err
    assert main(base + ["--fail-below", "2"]) == 2  # not a cosine
    assert main(base + ["--fail-on", "nonsense"]) == 2
    assert main(["compare", "-l", str(tmp_path / "missing"), "-r", str(c.gt), "--fail-below", "0.9"]) == 2


def test_fail_on_rule_and_json(tmp_path, rng, capsys):
    c = Chain(tmp_path, rng, 4, plants={2: noisy}, types=INT8)
    out = tmp_path / "gate.json"
    assert main(["compare", *c.args(), "--quiet", "--fail-on", "constant-output", "--json", str(out)]) == 0
    assert main(["compare", *c.args(), "--quiet", "--fail-on", "int16-layer", "--json", str(out)]) == 2  # exists
    assert main(["compare", *c.args(), "--quiet", "--fail-on", "int16-layer", "--json", str(out), "--force"]) == 1
    doc = json.loads(out.read_text())
    assert doc["passed"] is False
    (run,) = doc["runs"]
    assert run["gate"]["failing"][0].startswith("[int16-layer] #3 op2:output:0")
    assert run["verdict"]["first_below"]["name"] == "op2:output:0"
    assert {a["rule"] for a in run["advice"]} == {"int16-layer", "single-layer"}
    assert run["counts"]["compared"] == 7  # the quantize op's output (raw integers) is not compared


def test_report_gate_and_html(tmp_path, rng, capsys):
    c = Chain(tmp_path, rng, 4, plants={2: noisy}, types=INT8)
    html = tmp_path / "r.html"
    assert main(["report", *c.args(), "-o", str(html), "--quiet", "--fail-below", "0.9"]) == 1
    assert html.exists()
    assert main(["compare", *c.args(), "--quiet", "--html", str(tmp_path / "c.html"), "--fail-on", "any"]) == 1
    assert (tmp_path / "c.html").read_text().count("int16-layer") >= 1


def write_result(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType", "TensorIndex",
                    "Shape", "CosineSimilarity", "MaxAbsoluteError", "CompareFailReason"])
        for k, (name, cos, mae) in enumerate(rows):
            w.writerow([k, "Conv2D", name.split(":")[0], "float16", "0x0", name.split(":")[0], "float32", name,
                        "[1]", cos, mae, ""])


def test_diff(tmp_path, capsys):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    write_result(a, [("c1:output:0", "0.999900", "0.1"), ("c2:output:0", "0.990000", "0.2"),
                     ("c3:output:0", "0.950000", "0.5"), ("gone:output:0", "0.9", "1")])
    write_result(b, [("c1:output:0", "0.999950", "0.1"), ("c2:output:0", "0.970000", "0.3"),
                     ("c3:output:0", "0.990000", "0.1"), ("new:output:0", "0.9", "1")])
    assert main(["diff", str(a), str(b), "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert [c["key"] for c in d["worse"]] == ["c2:output:0"]
    assert [c["key"] for c in d["better"]] == ["c3:output:0"]
    assert d["unchanged"] == 1 and d["new"] == ["new:output:0"] and d["vanished"] == ["gone:output:0"]
    assert d["worse"][0]["delta"] == -0.02 or abs(d["worse"][0]["delta"] + 0.02) < 1e-12
    # an error column: smaller is better
    assert main(["diff", str(a), str(b), "--metric", "MaxAbsoluteError", "--tolerance", "0.05", "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert [c["key"] for c in d["better"]] == ["c3:output:0"] and [c["key"] for c in d["worse"]] == ["c2:output:0"]
    # the same file: nothing changed, exit 0
    assert main(["diff", str(a), str(a)]) == 0
    assert "0 worse, 0 better, 4 within" in capsys.readouterr().out
    # bad input: exit 2
    assert main(["diff", str(a), str(tmp_path / "missing.csv")]) == 2
    (tmp_path / "x.csv").write_text("not,a,result\n1,2,3\n")
    assert main(["diff", str(a), str(tmp_path / "x.csv")]) == 2
    assert main(["diff", str(a), str(b), "--metric", "Nope"]) == 2


def test_diff_of_real_compare_results(tmp_path, rng):
    c1 = Chain(tmp_path / "one", rng, 3)
    c2 = Chain(tmp_path / "two", rng, 3, plants={1: noisy})
    for c, name in ((c1, "a.csv"), (c2, "b.csv")):
        assert main(["compare", *c.args(), "-o", str(tmp_path / name), "--quiet"]) == 0
    assert main(["diff", str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]) == 1
    assert main(["diff", str(tmp_path / "b.csv"), str(tmp_path / "a.csv")]) == 0
