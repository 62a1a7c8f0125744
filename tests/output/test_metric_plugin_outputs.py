"""A streaming metric plug-in's columns (`-alg plugin:Name`, issue #38) in every output that shows extra metric
columns: the result file, the gates, `dumpcmp diff` and the HTML report; values checked against NumPy on the dumps."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

from dumpcmp.cli import main

from helpers.custom_metrics import expected_sumsq
from helpers.reportmodel import Chain

SSD = '''
import numpy as np


class SSD:
    columns = ("SSD",)

    def __init__(self):
        self.total = 0.0

    def update(self, device, truth):
        d = device.astype(np.float64) - truth.astype(np.float64)
        self.total += float(np.dot(d, d))

    def merge(self, other):
        self.total += other.total

    def result(self):
        return self.total
'''


@pytest.fixture
def setup(tmp_path, rng):
    folder = tmp_path / "c"
    (folder / "metric").mkdir(parents=True)
    (folder / "metric" / "metric_SSD.py").write_text(SSD, encoding="utf-8")
    chains = {}
    for name, plants in (("a", {}), ("b", {2: lambda gt, r: gt + r.standard_normal(gt.shape).astype(np.float32)})):
        chains[name] = Chain(tmp_path / name, rng, 4, plants=plants)
    return chains, ["-custom", str(folder), "-alg", "0,plugin:SSD", "--quiet"]


def _ssd(path):
    with open(path, newline="", encoding="utf-8") as f:
        return {r["TensorIndex"]: r["SSD"] for r in csv.DictReader(f)}


def test_result_gate_diff_and_report_carry_the_plugin_column(setup, tmp_path, capsys):
    chains, flags = setup
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert main(["compare", *chains["a"].args(), "-o", str(a), *flags]) == 0
    planted = expected_sumsq(chains["b"], 2)
    # the gate: only the planted layer is above
    assert main(["compare", *chains["b"].args(), "-o", str(b), *flags, "--fail-above", f"SSD={planted / 2}"]) == 1
    err = capsys.readouterr().err
    assert "gate: FAIL (1 failing)" in err and "#3 op2:output:0" in err
    cells = _ssd(b)
    for k in range(4):
        assert float(cells[f"op{k}:output:0"]) == pytest.approx(expected_sumsq(chains["b"], k), rel=1e-6, abs=1e-6)
    # diff: the plug-in's column compared as an error column
    assert main(["diff", str(a), str(b), "--metric", "SSD", "--tolerance", "1", "--json"]) == 1
    worse = {c["key"] for c in json.loads(capsys.readouterr().out)["worse"]}
    assert "op2:output:0" in worse
    # the report lists it among the extra columns
    html = tmp_path / "r.html"
    assert main(["report", *chains["b"].args(), "-o", str(html), *flags]) == 0
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>',
                                html.read_text(encoding="utf-8"), re.S).group(1))
    assert data["extra"] == ["SSD"]
