"""Gates on extra metric columns (the original's `-c DIR -alg Name` custom algorithms, and any plug-in whose columns
ride the same way): `--fail-below METRIC=X`, `--fail-above METRIC=X`, `--fail-on COLUMN` (a NaN cell fails, with its
reason), and `--json` carrying the extra values. Values checked against NumPy; one run in a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from dumpcmp.cli import main

from helpers.custom_metrics import PICKY, SUMSQ, expected_sumsq, plugins
from helpers.reportmodel import TS, Chain


@pytest.fixture
def setup(tmp_path, rng):
    chain = Chain(tmp_path, rng, 4, plants={2: lambda gt, r: gt + r.standard_normal(gt.shape).astype(np.float32)})
    first = float(np.load(chain.gt / f"op1.0.{TS + 2}.npy").ravel()[0])
    folder = plugins(tmp_path / "c", {"alg_SumSq.py": SUMSQ, "alg_Picky.py": PICKY})
    flags = ["-c", str(folder), "-alg", "0,SumSq,Picky", "-a", f"Picky:first={first!r}"]
    return chain, ["compare", *chain.args(), "--quiet", *flags]


def test_fail_above_an_extra_column(setup, capsys):
    chain, base = setup
    planted = expected_sumsq(chain, 2)
    assert planted > 1000 and all(expected_sumsq(chain, k) < 1 for k in (0, 1, 3))
    assert main(base + ["--fail-above", "SumSq=100"]) == 1
    err = capsys.readouterr().err
    # the planted layer only (op3's input repeats op2's output: listed once)
    assert "gate: FAIL (1 failing)" in err
    line = next(x for x in err.splitlines() if "SumSq" in x)
    assert line.strip().startswith("#3 op2:output:0 (Conv2D): SumSq ") and line.endswith(" > 100")
    assert float(line.split("SumSq ")[1].split(" >")[0]) == pytest.approx(planted, rel=1e-6)
    assert main(base + ["--fail-above", f"SumSq={planted * 1.01}"]) == 0
    assert "gate: PASS" in capsys.readouterr().err
    # a floor on it: every layer but the planted one is below 1
    assert main(base + ["--fail-below", "SumSq=1"]) == 1
    assert "gate: FAIL (" in capsys.readouterr().err


def test_a_nan_cell_fails_the_gate_with_its_reason(setup, capsys):
    chain, base = setup
    why = "Failed to execute 'compare' in 'Picky'. picky does not like this layer"
    assert main(base + ["--fail-below", "Picky=1"]) == 1
    err = capsys.readouterr().err
    assert "gate: FAIL (1 failing)" in err and f"#2 op1:output:0 (Relu): Picky NaN: {why}" in err
    assert main(base + ["--fail-on", "Picky"]) == 1
    err = capsys.readouterr().err
    assert "gate: FAIL (1 failing)" in err and f"[Picky] #2 op1:output:0 (Relu): Picky NaN: {why}" in err
    # the built-ins keep their rule (NaN fails only when the device side overflowed or went all zero)
    assert main(base + ["--fail-below", "CosineSimilarity=0.5", "--fail-below", "0.5"]) == 0


def test_json_carries_the_extra_values(setup, tmp_path, capsys):
    chain, base = setup
    out = tmp_path / "gate.json"
    assert main(base + ["--fail-above", "SumSq=100", "--fail-on", "Picky", "--json", str(out)]) == 1
    (run,) = json.loads(out.read_text())["runs"]
    assert run["gate"]["bounds"] == [{"metric": "SumSq", "limit": 100.0, "fails": "above"}]
    assert run["gate"]["fail_on"] == ["Picky"] and run["gate"]["fail_below"] is None
    assert len(run["gate"]["failing"]) == 2
    extra = run["extra_metrics"]
    assert extra["columns"] == ["SumSq", "Picky"]
    by_tensor = {r["tensor"]: r for r in extra["rows"]}
    for k in range(4):
        rec = by_tensor[f"op{k}:output:0"]
        assert rec["values"]["SumSq"] == pytest.approx(expected_sumsq(chain, k), rel=1e-6, abs=1e-6)
    assert by_tensor["op1:output:0"]["values"]["Picky"] is None
    assert by_tensor["op1:output:0"]["reason"].startswith("Failed to execute 'compare' in 'Picky'.")
    assert by_tensor["op2:output:0"]["values"]["Picky"] == 1.5 and "reason" not in by_tensor["op2:output:0"]


def test_report_gates_on_extra_columns(setup, tmp_path, capsys):
    chain, base = setup
    html = tmp_path / "r.html"
    assert main(["report", *base[1:], "-o", str(html), "--fail-above", "SumSq=100"]) == 1
    assert html.exists() and "#3 op2:output:0 (Conv2D): SumSq " in capsys.readouterr().err


@pytest.mark.parametrize(("flags", "words"), [
    (["--fail-below", "Nope=1"], "Nope is not a metric column of this comparison"),
    (["--fail-above", "3"], "give METRIC=X"),
    (["--fail-below", "SumSq=abc"], "'abc' is not a number"),
    (["--fail-on", "Nope"], "unknown rule Nope"),
    (["--fail-below", "MaxAbsoluteError=1"], "MaxAbsoluteError is not a metric column"),  # not in -alg
])
def test_bad_gates_are_exit_2_before_the_run(setup, tmp_path, flags, words):
    chain, base = setup
    out = tmp_path / "r.csv"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-m", "dumpcmp", *base, "-o", str(out), *flags], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_in_a_real_process(setup, tmp_path):
    chain, base = setup
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-m", "dumpcmp", *base, "-o", str(tmp_path / "r.csv"),
                           "--fail-above", "SumSq=100", "--json", "-"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "gate: FAIL (1 failing)" in proc.stderr and "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["passed"] is False and doc["runs"][0]["extra_metrics"]["columns"] == ["SumSq", "Picky"]


def test_json_on_standard_output_is_alone_there(setup, tmp_path, capsys):
    """`--json -` with a result file and a gate that passes: the gate's line goes to standard error, standard output
    holds the JSON only."""
    chain, base = setup
    assert main(base + ["-o", str(tmp_path / "r.csv"), "--fail-above", "SumSq=1e9", "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["passed"] is True and "gate: PASS" in captured.err


def test_a_cosine_floor_with_only_custom_columns(setup, tmp_path, capsys):
    """`-alg SumSq` alone: the engine still computes the built-ins behind the columns, and the cosine floor works as
    it did before extra columns had gates."""
    chain, base = setup
    base = [a if a != "0,SumSq,Picky" else "SumSq" for a in base]
    assert main(base + ["--fail-below", "0.9"]) == 1
    assert "#3 op2:output:0 (Conv2D): cosine " in capsys.readouterr().err
