"""`dumpcmp diff A.csv B.csv` on extra metric columns (a custom algorithm's, `compare -c DIR -alg Name`, or any
plug-in's): found in the header, compared as the built-ins are, a column one side lacks said so. Two real compare
results with a plug-in written in tmp_path, its values checked against NumPy; one diff in a real process."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from dumpcmp.cli import main
from dumpcmp.output.diff import diff, extra_metric_columns, read_result

from helpers.custom_metrics import SUMSQ, expected_sumsq, plugins
from helpers.reportmodel import Chain

TEXT = "def compare(x, y, args):\n    return 'fine', ''\n"


@pytest.fixture
def results(tmp_path, rng):
    """a.csv: a quiet chain; b.csv: the same shapes with op1 planted (its SumSq far larger)."""
    folder = plugins(tmp_path / "c", {"alg_SumSq.py": SUMSQ, "alg_Words.py": TEXT})
    chains = {}
    for name, plants in (("a", {}), ("b", {1: lambda gt, r: gt + r.standard_normal(gt.shape).astype(np.float32)})):
        chains[name] = Chain(tmp_path / name, rng, 3, plants=plants)
        out = tmp_path / f"{name}.csv"
        assert main(["compare", *chains[name].args(), "-o", str(out), "--quiet", "-c", str(folder),
                     "-alg", "0,1,SumSq,Words"]) == 0
    return chains, tmp_path / "a.csv", tmp_path / "b.csv"


def test_extra_columns_found_in_the_header(results):
    _, a, _ = results
    header, rows = read_result(a)
    # Words holds text: not a metric column; the built-ins are known ones
    assert extra_metric_columns(header, rows) == ["SumSq"]


def test_diff_compares_an_extra_column_as_an_error(results, capsys):
    chains, a, b = results
    # the quiet layers differ by their noise only (sums near 0.005): within the tolerance
    assert main(["diff", str(a), str(b), "--metric", "SumSq", "--tolerance", "1", "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    # op1's output and op2's input (the same device values against the same ground truth) got worse
    assert sorted(c["key"] for c in d["worse"]) == ["op1:output:0", "op2:input:0"]
    worse = {c["key"]: c for c in d["worse"]}["op1:output:0"]
    assert worse["a"] == pytest.approx(expected_sumsq(chains["a"], 1), rel=1e-6, abs=1e-6)
    assert worse["b"] == pytest.approx(expected_sumsq(chains["b"], 1), rel=1e-6, abs=1e-6)
    assert worse["delta"] == pytest.approx(worse["b"] - worse["a"])
    assert d["better"] == [] and "SumSq: an extra metric column, smaller is better" in d["notes"]
    # larger is better when the user says so: the same change is then better
    assert main(["diff", str(a), str(b), "--metric", "SumSq", "--tolerance", "1", "--higher-is-better",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["better"]) == 2 and d["worse"] == []
    # the built-ins' direction is known
    assert main(["diff", str(a), str(b), "--higher-is-better"]) == 2
    assert "direction is known" in capsys.readouterr().err


def test_a_text_column_cannot_be_compared(results, capsys):
    _, a, b = results
    assert main(["diff", str(a), str(b), "--metric", "Words"]) == 2
    err = capsys.readouterr().err
    assert "the Words column holds 'fine'" in err and "Traceback" not in err


def drop_column(src, dst, column):
    with open(src, newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    k = table[0].index(column)
    with open(dst, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([row[:k] + row[k + 1:] for row in table])


def test_one_side_lacking_a_column_is_said(results, tmp_path, capsys):
    _, a, b = results
    b_without = tmp_path / "b_without.csv"
    drop_column(b, b_without, "SumSq")
    # diffing cosine: a note says the extra column is only in A
    assert main(["diff", str(a), str(b_without)]) == 1
    out = capsys.readouterr().out
    assert f"note: SumSq: an extra metric column only {a} has" in out
    # diffing the column itself: exit 2 naming the file that lacks it
    assert main(["diff", str(a), str(b_without), "--metric", "SumSq"]) == 2
    assert f"{b_without}: no SumSq column; {a} has it" in capsys.readouterr().err
    assert diff(a, a, metric="SumSq").unchanged == len(read_result(a)[1])


def test_diff_in_a_real_process(results):
    _, a, b = results
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-m", "dumpcmp", "diff", str(a), str(b), "--metric", "SumSq",
                           "--tolerance", "1"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("2 worse, 0 better, ") and "(SumSq)" in proc.stdout
    assert "worse: op1:output:0: " in proc.stdout
