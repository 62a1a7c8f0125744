"""SigmaStar's compare (their MSE, COS and "RMSE" = relative L1), against a NumPy re-implementation of their
formulas on random data; the NHWC->NCHW retry, the ambiguous-shape rule, the jump flag, their console lines and the
CSV; bad input through the real CLI."""

from __future__ import annotations

import csv
import os
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest

from dumpcmp.cli import main
from dumpcmp.comparison.sigmastar import SigmaRow, compare_sigmastar, sigmastar_metrics
from dumpcmp.dumps.sigmastar import TensorSpec, write_sigmastar_dump
import dumpcmp

SRC = str(Path(dumpcmp.__file__).resolve().parents[1])  # the installed package (its _core), not the checkout


def reference(a, b):
    """Their formulas, written out element by element in float64 (compareAccuracy.c's loop)."""
    x = [float(v) for v in np.asarray(a, np.float32).reshape(-1)]
    y = [float(v) for v in np.asarray(b, np.float32).reshape(-1)]
    dot = sum(p * q for p, q in zip(x, y))
    cos = dot / (sum(p * p for p in x) ** 0.5 * sum(q * q for q in y) ** 0.5)
    mse = sum((p - q) ** 2 for p, q in zip(x, y)) / len(x)
    rel = sum(abs(p - q) for p, q in zip(x, y)) / sum(abs(q) for q in y)
    return mse, cos, rel


@pytest.mark.parametrize("seed", range(5))
def test_metrics_match_their_formulas(seed):
    rng = np.random.default_rng(seed)
    b = rng.standard_normal(1000).astype(np.float32) * rng.uniform(0.1, 10)
    a = (b + rng.standard_normal(1000) * rng.uniform(0.001, 1)).astype(np.float32)
    got = sigmastar_metrics(a, b)
    np.testing.assert_allclose(got, reference(a, b), rtol=1e-12)


def test_console_line_is_their_layout():
    row = SigmaRow(0, "3.conv1_xx_xx_xx.xx.output0", "n", "CONV_2D", 3, (1,), mse=0.000046, cos=0.999898,
                   rel_l1=0.014310)
    # a line of the SDK guide's auto_dump_debug.sh output, verbatim
    assert row.line() == ("3.conv1_xx_xx_xx.xx.output0             OP_TYPE:CONV_2D     MSE:0.000046    "
                          "COS:0.999898    RMSE:0.014310")


def pair(tmp_path, sample, bench, **kw):
    s = write_sigmastar_dump(tmp_path / "sample.bin", sample, **kw)
    b = write_sigmastar_dump(tmp_path / "bench.bin", bench)
    return s, b


def test_compare_random_layers_fixed_against_float(tmp_path):
    rng = np.random.default_rng(1)
    bench, sample, floats = [], [], []
    for k in range(4):
        x = rng.standard_normal((1, 5, 6, 7)).astype(np.float32)
        q = np.clip(np.round(x / 0.01), -32768, 32767).astype(np.int16)
        bench.append(TensorSpec(f"layer{k}", x, "CONV_2D", 2 * k))
        sample.append(TensorSpec(f"layer{k}", q, "CONV_2D", 2 * k, data_type="SGS_S16", scale=0.01))
        floats.append((x, (q.astype(np.float64) * 0.01).astype(np.float32)))
    sample.append(TensorSpec("w", np.ones(3, np.int16), "CONST", 9, data_type="SGS_S16", constant=True))
    s, b = pair(tmp_path, sample, bench, is_float=False)
    result = compare_sigmastar(s, b)
    assert [r.label for r in result.rows] == [f"{2 * k}.layer{k}.xx.output0" for k in range(4)]
    for row, (x, deq) in zip(result.rows, floats):
        np.testing.assert_allclose((row.mse, row.cos, row.rel_l1), reference(deq, x), rtol=1e-9)
        assert row.metrics.cosine_similarity == pytest.approx(row.cos, abs=1e-6)
        assert not row.jump and not row.error
    assert "1 constant tensor(s) (bConstant:1) not compared" in result.notes


def test_nhwc_retry(tmp_path):
    rng = np.random.default_rng(2)
    nhwc = rng.standard_normal((1, 4, 5, 3)).astype(np.float32)
    s, b = pair(tmp_path, [TensorSpec("t", nhwc.transpose(0, 3, 1, 2), "ADD", 1)], [TensorSpec("t", nhwc, "ADD", 1)])
    row = compare_sigmastar(s, b).rows[0]
    assert row.note == "benchmark NHWC->NCHW"
    assert (row.cos, row.mse, row.rel_l1) == (pytest.approx(1.0), 0.0, 0.0)


def test_shape_that_fits_neither_way_is_a_row_error_and_the_run_goes_on(tmp_path):
    x = np.ones((1, 2, 3, 4), np.float32)
    s, b = pair(tmp_path, [TensorSpec("t", x.reshape(1, 4, 3, 2), "ADD", 1), TensorSpec("u", x, "ADD", 2),
                           TensorSpec("v", x, "ADD", 3)],
                [TensorSpec("t", x, "ADD", 1), TensorSpec("u", x[..., :2], "ADD", 2), TensorSpec("v", x, "ADD", 3)])
    rows = compare_sigmastar(s, b).rows
    assert "is neither the benchmark's NHWC [1, 2, 3, 4] nor its NCHW [1, 4, 2, 3]" in rows[0].error
    assert rows[1].error == "24 values in the sample, 12 in the benchmark"
    assert rows[2].cos == pytest.approx(1.0)
    assert "not compared: 24 values" in rows[1].line()


def test_ambiguous_shape_recomputed_transposed(tmp_path):
    rng = np.random.default_rng(3)
    nhwc = rng.standard_normal((1, 6, 6, 6)).astype(np.float32)
    nchw = np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2))
    s, b = pair(tmp_path, [TensorSpec("t", nchw, "ADD", 1), TensorSpec("same", nhwc, "ADD", 2)],
                [TensorSpec("t", nhwc, "ADD", 1), TensorSpec("same", nhwc, "ADD", 2)])
    result = compare_sigmastar(s, b)
    first, second = result.rows
    origin = reference(nchw, nhwc)[1]
    assert origin < 0.98
    assert first.cos == pytest.approx(1.0) and first.note == (f"origin COS {origin:.6f} < 0.98, benchmark "
                                                              "NHWC->NCHW transposed")
    assert second.cos == pytest.approx(1.0) and second.note == ""


def test_jump_flag_and_cli_lines_and_csv(tmp_path, capsys):
    rng = np.random.default_rng(4)
    bench, sample = [], []
    errors = [0.01, 0.02, 1.5, 1.6, 2.7]  # "RMSE" rises by > 1.00 at layer 2 and at layer 4
    for k, e in enumerate(errors):
        x = rng.uniform(1, 2, 64).astype(np.float32)
        bench.append(TensorSpec(f"l{k}", x, "RELU", k))
        sample.append(TensorSpec(f"l{k}", x * (1 + e), "RELU", k))
    s, b = pair(tmp_path, sample, bench)
    out = tmp_path / "result.csv"
    assert main(["compare", "-l", str(s), "-r", str(b), "-o", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    flagged = [line.endswith("     **** OVER threshold!!!! ****") for line in lines[:5]]
    assert flagged == [False, False, True, False, True]
    assert lines[2].startswith("2.l2.xx.output0                         OP_TYPE:RELU        MSE:")
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [r["Jump"] for r in rows] == ["", "", "yes", "", "yes"]
    for r, e in zip(rows, errors):
        assert float(r["RelativeL1"]) == pytest.approx(e, abs=2e-6)
        assert r["CosineSimilarity"] == "1.000000"
    # no --force: the result file is not replaced
    before = out.read_bytes()
    assert main(["compare", "-l", str(s), "-r", str(b), "-o", str(out)]) == 2
    assert out.read_bytes() == before


def run_cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    return subprocess.run([sys.executable, "-m", "dumpcmp", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=120, cwd=cwd)


@pytest.mark.parametrize("side", ["sample", "bench"])
def test_truncated_dump_via_cli(tmp_path, side):
    x = np.ones((2, 3), np.float32)
    s, b = pair(tmp_path, [TensorSpec("a", x), TensorSpec("b/c", x, op_index=1)],
                [TensorSpec("a", x), TensorSpec("b/c", x, op_index=1)])
    bad = s if side == "sample" else b
    bad.write_bytes(bad.read_bytes()[:-9])
    r = run_cli("compare", "-l", s, "-r", b, "-o", tmp_path / "out.csv")
    assert r.returncode == 2
    assert r.stderr == f"dumpcmp: error: {bad}: tensor 1 ('b/c'): truncated: the payload has 24 bytes, the file " \
                       "holds 19 after its header\n"
    assert not (tmp_path / "out.csv").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.bin", "sample.bin"]


def test_right_that_is_not_a_benchmark(tmp_path):
    s, _ = pair(tmp_path, [TensorSpec("a", np.ones(2, np.float32))], [TensorSpec("a", np.ones(2, np.float32))])
    other = tmp_path / "x.txt"
    other.write_text("hello\n")
    r = run_cli("compare", "-l", s, "-r", other)
    assert r.returncode == 2 and "neither a SigmaStar dump" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("compare", "-l", s, "-r", tmp_path)
    assert r.returncode == 2 and "no golden_index.csv" in r.stderr and "Traceback" not in r.stderr
