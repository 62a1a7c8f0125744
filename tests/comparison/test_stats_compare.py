"""The statistics compare (`dumpcmp compare` with a statistics dump on the left): test_compare's model network,
its statistics file written from the device tensors with NumPy, paired through the graph JSON (fused and inserted
ops) with the ground truth, whose statistics the core computes; a planted fault is the first tensor that is not
pass; device vs device (another statistics dump, a dump of tensors); bad input exits 2 naming file and line."""

from __future__ import annotations

import csv
import math
import os
import subprocess
import sys

import pytest

from dumpcmp.cli import main
from dumpcmp.comparison.stats import ERROR, PASS, WARNING, Side, compare_stats, verdict_of
from helpers.statsfile import numpy_stats, record_of, write_stats
from test_compare import Model, ts

RUN = ("20260101000000", "0", "net", "1", "0")


def stats_dump(m: Model, root, columns="counts"):
    """The statistics a device would write for `m`'s dump: each tensor in its plain layout."""
    recs = [
        record_of("trans_Cast_0", "input", 0, m.truth["data"], op_type="Cast", timestamp=ts(1)),
        record_of("trans_Cast_0", "output", 0, m.x16, op_type="Cast", timestamp=ts(1)),
        record_of("conv1bn1relu1", "input", 0, m.x16, op_type="Conv2D", timestamp=ts(2)),
        record_of("conv1bn1relu1", "input", 1, m.w16, op_type="Conv2D", timestamp=ts(2)),
        record_of("conv1bn1relu1", "output", 0, m.relu16, op_type="Conv2D", timestamp=ts(2)),
        record_of("fc1", "input", 0, m.relu16.reshape(1, 500), op_type="MatMulV2", timestamp=ts(3)),
        record_of("fc1", "output", 0, m.fc16, op_type="MatMulV2", timestamp=ts(3)),
        record_of("prob", "input", 0, m.fc16, op_type="SoftmaxV2", timestamp=ts(4)),
        record_of("prob", "output", 0, m.prob16, op_type="SoftmaxV2", timestamp=ts(4)),
    ]
    return write_stats(root.joinpath(*RUN) / "statistic.csv", recs, columns=columns)


def by_tensor(result):
    return {r.pair.tensor_index: r for r in result.rows if r.pair.tensor_index}


def test_clean_network_passes_and_values_are_numpys(tmp_path, rng):
    m = Model(tmp_path, rng)
    stats_dump(m, tmp_path / "stats")
    (result,) = compare_stats(tmp_path / "stats", m.gt, fusion_json=m.graph)
    rows = by_tensor(result)
    assert rows["conv1bn1relu1:output:0"].pair.ground_truth_column == "conv1,bn1,relu1"
    assert rows["trans_Cast_0:output:0"].pair.ground_truth_op == "data"
    for key in ("trans_Cast_0:output:0", "conv1bn1relu1:input:1", "conv1bn1relu1:output:0", "fc1:output:0",
                "prob:output:0"):
        assert rows[key].verdict == PASS, (key, rows[key].note)
    gt = rows["conv1bn1relu1:output:0"].gt
    want = numpy_stats(m.truth["relu1"])
    assert gt.max == want["max"] and gt.min == want["min"] and gt.nan_count == 0 and gt.inf_count == 0
    assert gt.mean == pytest.approx(want["mean"], rel=1e-12) and gt.l2norm == pytest.approx(want["l2norm"], rel=1e-12)
    assert result.first_not_pass() is None
    # float16 rounding alone stays well inside the default warning threshold (docs/statistics.md, the defaults)
    assert max(max(r.rel_diff.values()) for r in result.rows if r.rel_diff) < 5e-4
    # with a graph, ground truth no device op stands for gets no row (as in the tensor compare)
    assert all(r.pair.npu_op is not None for r in result.rows) and len(result.rows) == 9
    assert "no tensor is worse than pass" in result.summary()
    order = [r.pair.tensor_index for r in result.rows if r.pair.tensor_index]
    assert order.index("trans_Cast_0:output:0") < order.index("conv1bn1relu1:output:0") < order.index("fc1:output:0")


def test_planted_fault_is_the_first_not_pass_tensor(tmp_path, rng):
    m = Model(tmp_path, rng, fc_error=0.5)
    stats_dump(m, tmp_path / "stats")
    (result,) = compare_stats(tmp_path / "stats", m.gt, fusion_json=m.graph)
    first = result.first_not_pass()
    assert first is not None and first.pair.tensor_index == "fc1:output:0" and first.verdict == ERROR
    assert "first not pass, in execution order: fc1:output:0 (error: " in result.summary()
    fc = by_tensor(result)["fc1:output:0"]
    npu, gt = numpy_stats(m.fc16), numpy_stats(m.truth["fc1"])
    assert fc.abs_diff["mean"] == pytest.approx(abs(npu["mean"] - gt["mean"]), rel=1e-9)
    scale = max(abs(gt["max"]), abs(gt["min"]))
    assert fc.rel_diff["mean"] == pytest.approx(abs(npu["mean"] - gt["mean"]) / scale, rel=1e-9)
    assert fc.rel_diff["l2norm"] == pytest.approx(abs(npu["l2norm"] - gt["l2norm"]) / gt["l2norm"], rel=1e-9)


def test_cli_writes_the_csv_and_the_summary(tmp_path, rng, capsys):
    m = Model(tmp_path, rng, fc_error=0.5)
    stats_dump(m, tmp_path / "stats", columns="runtime")
    out = tmp_path / "stats.csv"
    assert main(["compare", "-l", str(tmp_path / "stats"), "-r", str(m.gt), "-f", str(m.graph), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "first not pass, in execution order: fc1:output:0 (error" in printed and f"result: {out}" in printed
    with open(out, newline="") as f:
        table = list(csv.reader(f))
    header = table[0]
    assert header[:6] == ["Index", "OpType", "NPUDump", "TensorIndex", "GroundTruth", "Shape"]
    assert header[-2:] == ["Verdict", "Note"] and "L2Norm RelDiff" in header
    rows = {r[3]: dict(zip(header, r)) for r in table[1:]}
    fc = rows["fc1:output:0"]
    assert fc["Verdict"] == "error" and fc["GroundTruth"] == "fc1" and fc["Shape"] == "(1,10)"
    assert float(fc["GT Max"]) == pytest.approx(float(m.truth["fc1"].max()), rel=1e-5)
    assert fc["NPU NaN"] == "N/A" and fc["GT NaN"] == "0"  # the runtime column set has no counts
    # the existing file is kept without --force
    assert main(["compare", "-l", str(tmp_path / "stats"), "-r", str(m.gt), "-f", str(m.graph), "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err


def test_thresholds_grade_the_verdict():
    gt = Side(max=10.0, min=-10.0, mean=0.0, l2norm=100.0, nan_count=0, inf_count=0)
    assert verdict_of(Side(10.0, -10.0, 0.0, 100.05, 0, 0), gt)[0] == PASS
    assert verdict_of(Side(10.0, -10.0, 0.0, 100.5, 0, 0), gt)[0] == WARNING
    assert verdict_of(Side(10.0, -10.0, 0.0, 102.0, 0, 0), gt)[0] == ERROR
    assert verdict_of(Side(10.0, -10.0, 0.0, 100.5, 0, 0), gt, warning=1e-2, error=1e-1)[0] == PASS
    assert verdict_of(Side(10.0, -10.0, 0.05, 100.0, 0, 0), gt)[0] == WARNING  # |0.05| / 10 = 5e-3
    v, _, _, why = verdict_of(Side(10.0, -10.0, 0.0, 100.0, 3, 0), gt)
    assert v == ERROR and "NaN count 3 vs 0" in why
    v, _, _, why = verdict_of(Side(math.inf, -10.0, math.inf, math.inf, None, None), gt)
    assert v == ERROR and "Max inf vs 10" in why
    assert verdict_of(Side(), gt)[0] == ""


def test_device_vs_device_statistics_and_tensors(tmp_path, rng):
    m = Model(tmp_path, rng)
    stats_dump(m, tmp_path / "stats")
    # against the same network's statistics: every tensor equal
    stats_dump(m, tmp_path / "stats_b")
    (same,) = compare_stats(tmp_path / "stats", tmp_path / "stats_b")
    assert {r.verdict for r in same.rows} == {PASS} and len(same.rows) == 9
    # against the dump of tensors (device layouts decoded as the tensor compare decodes them)
    (dev,) = compare_stats(tmp_path / "stats", m.root / "dump")
    rows = by_tensor(dev)
    for key in ("conv1bn1relu1:output:0", "conv1bn1relu1:input:1", "fc1:output:0", "prob:output:0"):
        assert rows[key].verdict == PASS, (key, rows[key].note)
        assert rows[key].rel_diff["l2norm"] < 1e-6


def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "dumpcmp", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=120)


def test_corrupt_statistics_exit_2_naming_file_and_line(tmp_path, rng):
    m = Model(tmp_path, rng)
    path = stats_dump(m, tmp_path / "stats")
    with open(path, newline="") as f:
        table = list(csv.reader(f))
    column = table[0].index("Max Value")
    table[4][column] = "1.2.3"  # line 5
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(table)
    done = run_cli("compare", "-l", tmp_path / "stats", "-r", m.gt, "-f", m.graph, "-o", tmp_path / "out.csv")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{path}: line 5: column {column + 1} (max): '1.2.3' is not a number" in done.stderr
    assert not (tmp_path / "out.csv").exists()
    done = run_cli("compare", "-l", tmp_path / "stats", "-r", m.gt, "--stats-warning", "0.5", "--stats-error", "0.1")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "warning 0.5 must be between 0" in done.stderr


def test_a_tree_with_both_kinds_compares_tensors_unless_asked(tmp_path, rng, capsys):
    m = Model(tmp_path, rng, fc_error=0.5)
    stats_dump(m, tmp_path / "dump")  # statistic.csv beside the tensor dumps of the same run
    args = ["compare", "-l", str(tmp_path / "dump"), "-r", str(m.gt), "-f", str(m.graph)]
    assert main(args + ["-o", str(tmp_path / "tensors.csv")]) == 0
    with open(tmp_path / "tensors.csv", newline="") as f:
        assert "CosineSimilarity" in next(csv.reader(f))
    capsys.readouterr()
    assert main(args + ["--stats", "-o", str(tmp_path / "stats.csv")]) == 0
    assert "first not pass, in execution order: fc1:output:0 (error" in capsys.readouterr().out
    with open(tmp_path / "stats.csv", newline="") as f:
        assert "L2Norm RelDiff" in next(csv.reader(f))
