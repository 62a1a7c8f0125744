"""`dumpcmp compare -d OP`: one tensor element by element, through the same pairing and layout decoding as the
model-level comparison (the Model fixture of test_compare: fused ops, fractal layouts, a graph JSON)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from dumpcmp.cli import main
from dumpcmp.errors import NotFoundError
from dumpcmp.comparison.single_op import compare_op

from test_compare import Model


@pytest.fixture
def model(tmp_path, rng):
    return Model(tmp_path, rng)


def read_detail(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def test_fused_nc1hwc0_output_cell_by_cell(model, tmp_path):
    out = tmp_path / "detail"
    result = compare_op(model.root / "dump", model.gt, "conv1bn1relu1", out, fusion_json=model.graph)
    x = model.relu16.astype(np.float32).ravel()
    y = model.truth["relu1"].ravel()
    assert result.total_count == x.size == 500
    header, rows = read_detail(out / "conv1bn1relu1_output_0_0.csv")
    assert header == ["Index", "N C H W", "NPUDump", "GroundTruth", "AbsoluteError", "RelativeError"]
    assert len(rows) == 500
    for k in (0, 1, 137, 499):
        n, c, h, w = np.unravel_index(k, (1, 20, 5, 5))
        abs_err = np.abs(x[k] - y[k])  # float32, as the original computes it
        rel = "-" if y[k] == 0 else "%.6f\t" % (abs_err / np.abs(y[k]))
        assert rows[k] == [str(k), f"{n} {c} {h} {w}", "%.6f\t" % x[k], "%.6f\t" % y[k], "%.6f\t" % abs_err, rel]
    summary = (out / "conv1bn1relu1_output_0_summary.txt").read_text().splitlines()
    # the original's lines: every original op of the fused op, space-separated; the coordinate header as Format
    assert summary[:4] == ["TotalCount:500", "NPUDump:conv1bn1relu1", "GroundTruth:conv1 bn1 relu1",
                           "Format:N C H W"]
    assert summary[5] == "MaxAbsoluteError:%.6f" % np.max(np.abs(x - y))
    # its other files: the two top-N lists and the device tensor in NCHW, in its own dtype
    device = np.load(out / "conv1bn1relu1_output_0.npy")
    assert device.dtype == np.float16 and device.shape == (1, 20, 5, 5)
    np.testing.assert_array_equal(device.ravel(), model.relu16.ravel())
    top = (out / "conv1bn1relu1_output_0_absolute_error_topn.csv").read_text().splitlines()
    assert top[0] == ",".join(header) and len(top) == 21
    first = int(top[1].split(",")[0])
    assert np.abs(x[first] - y[first]) == np.max(np.abs(x - y))


def test_input_through_an_inserted_cast_and_a_weight_in_fractal_z(model, tmp_path):
    r = compare_op(model.root / "dump", model.gt, "conv1bn1relu1", tmp_path / "in0", kind="input", index=0,
                   fusion_json=model.graph)
    assert r.total_count == 75  # (1, 3, 5, 5): the padded channels of NC1HWC0 are cropped
    w = compare_op(model.root / "dump", model.gt, "conv1bn1relu1", tmp_path / "in1", kind="input", index=1,
                   fusion_json=model.graph, fmt="npy")
    assert w.total_count == 20 * 3 * 3 * 3
    npu = np.load(tmp_path / "in1" / "conv1bn1relu1_input_1_npu.npy")
    gt = np.load(tmp_path / "in1" / "conv1bn1relu1_input_1_ground_truth.npy")
    np.testing.assert_array_equal(npu, model.w16.astype(np.float32).ravel())
    np.testing.assert_array_equal(gt, model.truth["conv1_w"].ravel())


def test_fractal_nz_output_and_line_limit(model, tmp_path):
    out = tmp_path / "fc"
    r = compare_op(model.root / "dump", model.gt, "fc1", out, fusion_json=model.graph, max_lines=4, top_n=3)
    assert r.total_count == 10
    files = sorted(p.name for p in out.glob("fc1_output_0_*.csv") if not p.name.endswith(("top.csv", "topn.csv")))
    assert files == ["fc1_output_0_0.csv", "fc1_output_0_1.csv", "fc1_output_0_2.csv"]
    assert [len(read_detail(out / f)[1]) for f in files] == [4, 4, 2]
    errors = np.abs(model.fc16.astype(np.float64).ravel() - model.truth["fc1"].astype(np.float64).ravel())
    assert [t.index for t in r.top_abs] == list(np.argsort(-errors, kind="stable")[:3])


def test_errors_exit_2_and_leave_nothing(model, tmp_path, capsys):
    base = ["compare", "-l", str(model.root / "dump"), "-r", str(model.gt), "-f", str(model.graph), "--quiet"]
    out = tmp_path / "o"
    assert main(base + ["-d", "conv1bn1relu", "-o", str(out)]) == 2
    assert "did you mean conv1bn1relu1" in capsys.readouterr().err
    assert main(base + ["-d", "fc1", "-t", "output", "-i", "3", "-o", str(out)]) == 2
    assert "has no output 3" in capsys.readouterr().err
    assert main(base + ["-d", "broken", "-o", str(out)]) == 2
    assert "truncated" in capsys.readouterr().err
    assert main(base + ["-d", "fc1"]) == 2  # no -o
    assert not out.exists() or list(out.iterdir()) == []
    assert main(base + ["-d", "fc1", "-o", str(out)]) == 0
    assert main(base + ["-d", "fc1", "-o", str(out)]) == 2  # exists: never replaced without --force
    assert main(base + ["-d", "fc1", "-o", str(out), "--force"]) == 0


def test_not_found_api(model, tmp_path):
    with pytest.raises(NotFoundError, match="no device op named 'nope'"):
        compare_op(model.root / "dump", model.gt, "nope", tmp_path / "x")


def test_original_extras_stop_at_the_memory_limit(model, tmp_path, monkeypatch):
    import dumpcmp.comparison.detail as D

    monkeypatch.setattr(D, "ORIGINAL_EXTRAS_LIMIT", 100)  # the fused output has 500 elements
    out = tmp_path / "big"
    result = compare_op(model.root / "dump", model.gt, "conv1bn1relu1", out, fusion_json=model.graph)
    assert result.notes and "up to 100 elements" in result.notes[0]
    names = sorted(p.name for p in out.iterdir())
    assert names == ["conv1bn1relu1_output_0_0.csv", "conv1bn1relu1_output_0_summary.txt",
                     "conv1bn1relu1_output_0_top.csv"]
