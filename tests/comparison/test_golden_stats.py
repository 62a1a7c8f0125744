"""`dumpcmp golden --stats` writes statistic.csv beside the .npy files (each row NumPy's statistics of its file, an
independent reference), and the statistics compare reads a row instead of recomputing when op, output index and
timestamp match its file, saying so in the summary; a stale or missing row is computed; a bad file is exit 2."""

from __future__ import annotations

import csv
import math
import os

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.cli.dispatch import main  # noqa: E402
from dumpcmp.device.acljson import new_acl_json, write_acl_json  # noqa: E402
from dumpcmp.dumps.stats import read_stats  # noqa: E402
from helpers.locate_nets import build_net, net_input  # noqa: E402
from helpers.statsfile import numpy_stats  # noqa: E402


@pytest.fixture
def net(tmp_path):
    model = build_net(tmp_path / "net.onnx", attention=False)
    np.save(tmp_path / "x.npy", net_input())
    (tmp_path / "s").mkdir()
    acl = write_acl_json(new_acl_json(["net"], dump_path=str(tmp_path / "s"), dump_mode="all", dump_data="stats"),
                         tmp_path / "acl.json")
    assert main(["simulate", str(model), "-i", str(tmp_path / "x.npy"), "--acl-json", str(acl), "--quiet"]) == 0
    return tmp_path


def _golden(d, out, *extra):
    return main(["golden", str(d / "net.onnx"), "-i", str(d / "x.npy"), "-o", str(out), "--quiet", *extra])


def _compare(d, gt, out):
    return main(["compare", "-l", str(d / "s"), "-r", str(gt), "-f", str(d / "s" / "model.json"), "-o", str(out)])


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_golden_stats_rows_equal_numpy_over_each_file(net):
    assert _golden(net, net / "gt", "--stats") == 0
    records = read_stats(net / "gt" / "statistic.csv").records
    files = sorted(f for f in os.listdir(net / "gt") if f.endswith(".npy"))
    assert len(records) == len(files)
    for r in records:
        name = f"{r.op_name}.{r.slot}.{r.timestamp}.npy"
        assert name in files and r.kind == "output"
        a = np.load(net / "gt" / name)
        ref = numpy_stats(a)
        for k in ("max", "min", "mean", "l2norm"):
            assert math.isclose(getattr(r, k), ref[k], rel_tol=1e-12, abs_tol=1e-300), (name, k)
        for k in ("count", "nan_count", "neg_inf_count", "pos_inf_count", "zero_count"):
            assert getattr(r, k) == ref[k]
        assert r.shape == a.shape and r.data_size == a.nbytes


def test_compare_reads_the_rows_instead_of_recomputing(net, capsys):
    assert _golden(net, net / "plain") == 0
    assert _golden(net, net / "gt", "--stats") == 0
    assert not (net / "plain" / "statistic.csv").exists()
    capsys.readouterr()
    assert _compare(net, net / "plain", net / "a.csv") == 0
    assert "statistics read from" not in capsys.readouterr().out
    assert _compare(net, net / "gt", net / "b.csv") == 0
    out = capsys.readouterr().out
    assert f"ground truth statistics read from {net / 'gt' / 'statistic.csv'}" in out
    a, b = _rows(net / "a.csv"), _rows(net / "b.csv")
    assert [r["Verdict"] for r in a] == [r["Verdict"] for r in b]
    assert all(r["Verdict"] in ("pass", "*") for r in b)

    # the row is what is compared: a row changed by hand turns its tensor into an error
    stats = net / "gt" / "statistic.csv"
    lines = stats.read_text().splitlines()
    header = next(csv.reader([lines[0]]))
    victim = next(i for i, line in enumerate(lines) if ",stem_relu," in line)
    cells = next(csv.reader([lines[victim]]))
    cells[header.index("Max Value")] = str(float(cells[header.index("Max Value")]) * 3)
    lines[victim] = ",".join(f'"{c}"' if "," in c else c for c in cells)
    stats.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert _compare(net, net / "gt", net / "c.csv") == 0
    c = _rows(net / "c.csv")
    bad = [r for r in c if r["Verdict"] == "error"]
    assert bad and all(r["GroundTruth"].startswith("stem_relu") for r in bad)

    # a row whose timestamp is not its file's (a stale file) is not used: the file is read
    cells[header.index("Timestamp")] = "1"
    lines[victim] = ",".join(f'"{c}"' if "," in c else c for c in cells)
    stats.write_text("\n".join(lines) + "\n")
    assert _compare(net, net / "gt", net / "d.csv") == 0
    assert [r["Verdict"] for r in _rows(net / "d.csv")] == [r["Verdict"] for r in a]


def test_a_bad_statistics_file_beside_the_ground_truth_is_exit_2_naming_it(net, capsys, monkeypatch):
    assert _golden(net, net / "gt", "--stats") == 0
    stats = net / "gt" / "statistic.csv"
    with open(stats, "a") as f:
        f.write("Conv,x,,,5,output,zero,4,float32,ND,(1),1,1,1,1,1,0,0,0,0\n")
    capsys.readouterr()
    from dumpcmp.cli.dispatch import main  # in process; dispatch.run() would install the process's signal handlers

    code = main(["compare", "-l", str(net / "s"), "-r", str(net / "gt"), "-f", str(net / "s" / "model.json"), "-o",
                 str(net / "r.csv")])
    assert code == 2
    err = capsys.readouterr().err
    assert str(stats) in err and "line" in err and "Traceback" not in err
    assert not (net / "r.csv").exists()


def test_golden_force_without_stats_removes_the_old_statistics_file(net):
    assert _golden(net, net / "gt", "--stats") == 0
    assert (net / "gt" / "statistic.csv").is_file()
    assert _golden(net, net / "gt", "--force") == 0
    assert not (net / "gt" / "statistic.csv").exists()
