"""Single-operator detail export against a NumPy/Python reading of the spec (metrics-and-outputs.md, single-operator).

The reference is the original tool's own arithmetic and text: both errors in NumPy float32 (|x - y| and
|x - y| / |y|), every number with Python's "%.6f" and a TAB after it, an inf/NaN absolute error as `nan`, a relative
error that is not finite as `-`; the summary's extremes read an inf/NaN error as 0 (NumPy's nan_to_num); rows are
split into files by plain list slicing.
"""

from __future__ import annotations

import csv
import math
import os
import subprocess
import sys
import threading
import _thread

import ml_dtypes
import numpy as np
import pytest

from dumpcmp.dumps import naming
from dumpcmp.support.native import core
from dumpcmp.comparison.detail import (
    NPY_COLUMNS,
    coordinate_header,
    detail_prefix,
    export_detail,
    format_top_table,
    padded_shape,
)
from dumpcmp.dumps.dump import TensorData, open_dump, write_dump
from dumpcmp.errors import ConfigError, DumpcmpError

from helpers.layout_reference import loops_fractal_z, loops_nc1hwc0

HEADER = "Index,N C H W,NPUDump,GroundTruth,AbsoluteError,RelativeError"


# ---- the reference ---------------------------------------------------------------------------------------------


def cell(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "%.6f" % v


def errors(x32: np.ndarray, y32: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = x32.astype(np.float32).ravel()
    Y = y32.astype(np.float32).ravel()
    with np.errstate(all="ignore"):
        ae = np.abs(X - Y)
        re_all = ae / np.abs(Y)
        defined = np.isfinite(re_all)
        re = np.where(defined, re_all, np.float32(np.nan))
    return ae.astype(np.float64), re.astype(np.float64), defined


def finite_or_zero(values: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(values), values, 0.0)


def reference_rows(x32: np.ndarray, y32: np.ndarray, shape: tuple[int, ...], original: bool = True) -> list[str]:
    """The detail rows as the original writes them (`original`), or in the `_top.csv` file's plain form."""
    ae, re, defined = errors(x32, y32)
    dims = padded_shape(shape)
    rows = []
    for i, coords in enumerate(np.ndindex(*dims)):
        x, y = float(x32.flat[i]), float(y32.flat[i])
        if original:
            rel = "%.6f\t" % re[i] if defined[i] else "-"
            a = "%.6f" % ae[i] if np.isfinite(ae[i]) else "nan"
            rows.append(f"{i},{' '.join(map(str, coords))},{'%.6f' % x}\t,{'%.6f' % y}\t,{a}\t,{rel}")
        else:
            rel = cell(re[i]) if defined[i] else "-"
            rows.append(f"{i},{' '.join(map(str, coords))},{cell(x)},{cell(y)},{cell(ae[i])},{rel}")
    return rows


def read_rows(paths, header: str = HEADER) -> list[list[str]]:
    """Each file's data lines (header checked and dropped)."""
    out = []
    for p in paths:
        with open(p, newline="") as f:
            lines = f.read().split("\n")
        assert lines[-1] == ""
        assert lines[0] == header
        out.append(lines[1:-1])
    return out


def nan_extreme(values: np.ndarray, fn) -> float:
    if values.size == 0 or np.isnan(values).any():
        return math.nan
    return float(fn(values))


def expected_top(key: np.ndarray, candidates: np.ndarray, n: int) -> list[int]:
    """Indices by error descending, NaN first, ties to the lower index."""
    idx = [int(i) for i in np.flatnonzero(candidates)]
    idx.sort(key=lambda i: (0, i) if math.isnan(key[i]) else (1, -key[i], i))
    return idx[:n]


def sources(x: np.ndarray, y: np.ndarray):
    source = core.compare.source_from_array
    return source(np.ascontiguousarray(x)), source(np.ascontiguousarray(y))


def special_pair(rng, shape):
    n = int(np.prod(shape, dtype=np.int64))
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    y = (x + rng.standard_normal(n).astype(np.float32) * 0.01).astype(np.float32)
    if n >= 8:
        y[0] = 0.0
        y[1] = np.nan
        y[2] = np.inf
        x[3] = np.nan
        x[4] = -np.inf
        y[5] = -0.0
        x[6] = -1e-9
        y[7] = 3.0e-38  # tiny ground truth: huge but defined relative error
    return x.reshape(shape), y.reshape(shape)


# ---- cells ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4, 5), (17,), (), (1, 1, 9), (2, 3, 2, 2, 3)])
def test_csv_cells_match_numpy(tmp_path, rng, shape):
    x, y = special_pair(rng, shape)
    xs, ys = sources(x, y)
    r = export_detail(xs, ys, shape, tmp_path, op_name="conv1", ground_truth_name="conv1_gt",
                      layout_name="NCDHW" if len(shape) == 5 else "NCHW")
    assert r.detail_files == (str(tmp_path / "conv1_output_0_0.csv"),)
    with open(r.detail_files[0]) as f:
        lines = f.read().split("\n")
    expected_header = HEADER if len(shape) <= 4 else HEADER.replace("N C H W", "N C D H W")
    assert lines[0] == expected_header
    assert lines[1:-1] == reference_rows(x, y, shape)
    assert lines[-1] == ""
    # the CSV module reads it back as six columns a row
    with open(r.detail_files[0], newline="") as f:
        assert all(len(row) == 6 for row in csv.reader(f))


def test_bool_sides(tmp_path, rng):
    x = rng.random(40) < 0.5
    y = rng.random(40) < 0.5
    r = export_detail(*sources(x, y), x.shape, tmp_path, op_name="mask", ground_truth_name="mask")
    (rows,) = read_rows(r.detail_files)
    assert rows == reference_rows(x.astype(np.float32), y.astype(np.float32), x.shape)
    assert r.rel_count == int(y.sum())  # 0 / 0 where the ground truth is False: not finite


@pytest.mark.parametrize("data_type,np_type", [("FLOAT16", np.float16), ("BF16", ml_dtypes.bfloat16)])
def test_half_precision_device_data(tmp_path, rng, data_type, np_type):
    plain = rng.standard_normal((2, 5, 3)).astype(np_type)
    plain.ravel()[3] = np.nan
    gt = rng.standard_normal((2, 5, 3)).astype(np.float32)
    gt.ravel()[4] = 0
    raw = np.ascontiguousarray(plain).view(np.uint8).ravel()  # the device's storage bytes
    x = core.compare.source_from_array(raw, data_type=data_type)
    r = export_detail(x, core.compare.source_from_array(gt), gt.shape, tmp_path, op_name="h", ground_truth_name="h")
    (rows,) = read_rows(r.detail_files)
    assert rows == reference_rows(plain.astype(np.float32), gt, gt.shape)


def test_nc1hwc0_fp16_dump_against_fp32_nchw(tmp_path, rng):
    shape = (2, 19, 3, 2)  # C not a multiple of C0: the padding must not appear
    plain = rng.standard_normal(shape).astype(np.float16)
    device = loops_nc1hwc0(plain, 16)
    path = write_dump(tmp_path / "Conv2D.conv1.1.1700000000000000", op_name="conv1",
                      outputs=[TensorData(device, data_type="FLOAT16", format="NC1HWC0", original_shape=shape)])
    x = core.compare.source_from_dump(open_dump(path)._file, "output", 0, dst_format="NCHW", dst_shape=list(shape))
    gt = (plain.astype(np.float32) + rng.standard_normal(shape).astype(np.float32) * 1e-3).astype(np.float32)
    out = tmp_path / "out"
    r = export_detail(x, core.compare.source_from_array(gt), shape, out, op_name="conv1", ground_truth_name="conv1",
                      max_lines=50)
    rows = [row for part in read_rows(r.detail_files) for row in part]
    assert rows == reference_rows(plain.astype(np.float32), gt, shape)


def test_fractal_z_weight(tmp_path, rng):
    shape = (20, 7, 2, 3)
    plain = rng.standard_normal(shape).astype(np.float16)
    device = loops_fractal_z(plain, 16)
    path = write_dump(tmp_path / "Const.w.1.1700000000000000", op_name="w",
                      outputs=[TensorData(device, data_type="FLOAT16", format="FRACTAL_Z", original_shape=shape)])
    x = core.compare.source_from_dump(open_dump(path)._file, "output", 0, dst_format="NCHW", dst_shape=list(shape))
    gt = rng.standard_normal(shape).astype(np.float32)
    r = export_detail(x, core.compare.source_from_array(gt), shape, tmp_path / "o", op_name="w", ground_truth_name="w",
                      fmt="npy")
    cols = {name: np.load(p) for name, p in zip(NPY_COLUMNS, r.detail_files)}
    np.testing.assert_array_equal(cols["npu"], plain.astype(np.float32).ravel())


def test_fixed_formatting_matches_printf(rng):
    values = np.concatenate([
        rng.standard_normal(20000) * 10.0 ** rng.integers(-15, 20, 20000),
        rng.standard_normal(5000).astype(np.float32).astype(np.float64),
        np.arange(1, 3000) * 5e-7,  # near the rounding boundary of the sixth decimal
        [0.0, -0.0, 5e-7, 1.5e-6, 2.5e-6, -4e-7, 2.0 ** 44, 2.0 ** 44 - 0.5, 1.8e308, -3.4e38, 5e-324, 1e-300],
    ])
    for v in values:
        assert core.detail.format_fixed6(float(v)) == "%.6f" % v, v
    assert [core.detail.format_fixed6(v) for v in (math.nan, math.inf, -math.inf)] == ["NaN", "inf", "-inf"]


# ---- files and rows ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rows,max_lines,files", [
    (6, 6, 1), (7, 6, 2), (13, 6, 3), (5, 6, 1), (12, 6, 2), (1, 1, 1), (3, 1, 3), (0, 4, 1),
])
def test_split_exactly_at_the_line_limit(tmp_path, rng, rows, max_lines, files):
    x = rng.standard_normal(rows).astype(np.float32)
    y = rng.standard_normal(rows).astype(np.float32)
    r = export_detail(*sources(x, y), (rows,), tmp_path, op_name="op", ground_truth_name="op",
                      max_lines=max_lines, kind="input", index=2)
    assert r.detail_files == tuple(str(tmp_path / f"op_input_2_{k}.csv") for k in range(files))
    parts = read_rows(r.detail_files)
    ref = reference_rows(x, y, (rows,))
    assert parts == [ref[k * max_lines:(k + 1) * max_lines] for k in range(files)]
    assert sorted(os.listdir(tmp_path)) == sorted(
        [f"op_input_2_{k}.csv" for k in range(files)] + ["op_input_2_summary.txt", "op_input_2_top.csv"])


@pytest.mark.parametrize("block_rows", [1, 2, 3, 5, 7, 64])
@pytest.mark.parametrize("threads", [1, 2])
def test_blocks_smaller_and_larger_than_files(tmp_path, rng, block_rows, threads):
    n, max_rows = 23, 5
    x, y = special_pair(rng, (n,))
    files = [str(tmp_path / f"d{k}.csv") for k in range(5)]
    core.detail.export_detail(*sources(x, y), shape=[n], csv_paths=files, max_rows=max_rows, block_rows=block_rows,
                       threads=threads)
    ref = reference_rows(x, y, (n,))
    assert read_rows(files) == [ref[k * max_rows:(k + 1) * max_rows] for k in range(5)]


def test_thread_counts_give_identical_files(tmp_path, rng):
    shape = (3, 50, 41, 17)  # ~100k rows: several blocks of the default size
    x, y = special_pair(rng, shape)
    results = []
    for threads in (1, 2):
        out = tmp_path / f"t{threads}"
        r = export_detail(*sources(x, y), shape, out, op_name="op", ground_truth_name="op", threads=threads,
                          max_lines=40000)
        results.append(r)
    for a, b in zip(results[0].files, results[1].files):
        with open(a, "rb") as fa, open(b, "rb") as fb:
            assert fa.read() == fb.read(), os.path.basename(a)
    # repr: NaN entries compare unequal as floats
    assert repr(results[0].top_abs) == repr(results[1].top_abs)
    assert repr(results[0].top_rel) == repr(results[1].top_rel)


def test_file_count_rule():
    assert [core.detail.file_count(n, 3) for n in (0, 1, 3, 4, 6, 7)] == [1, 1, 1, 2, 2, 3]
    with pytest.raises(ValueError):
        core.detail.file_count(5, 0)


# ---- summary and top lists --------------------------------------------------------------------------------------


def summary_lines(path) -> list[str]:
    with open(path) as f:
        text = f.read()
    assert text.endswith("\n")
    return text[:-1].split("\n")


def test_summary_values(tmp_path, rng):
    shape = (4, 6, 5)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(shape).astype(np.float32)
    y[0, 0, :2] = 0  # undefined relative errors are left out of Min/MaxRelativeError
    y[1, 1, 1] = np.inf  # so is an infinite ground truth... but its absolute error is inf
    r = export_detail(*sources(x, y), shape, tmp_path, op_name="a/b/c", ground_truth_name=["gt1", "gt2"])
    ae, re, defined = errors(x, y)
    a0, r0 = finite_or_zero(ae), finite_or_zero(re)  # the original reads inf/NaN errors as 0 here
    assert summary_lines(r.summary_path) == [
        f"TotalCount:{x.size}", "NPUDump:a/b/c", "GroundTruth:gt1,gt2", "Format:NCHW",
        f"MinAbsoluteError:{cell(a0.min())}", f"MaxAbsoluteError:{cell(a0.max())}",
        "MinRelativeError:0.000000", f"MaxRelativeError:{cell(r0.max())}",
    ]
    assert r.summary_path == str(tmp_path / "a_b_c_output_0_summary.txt")
    assert (r.total_count, r.rel_count) == (x.size, int(defined.sum()))
    assert r.min_abs_error == a0.min() and r.max_rel_error == r0.max()


def test_summary_nan_and_nothing_defined(tmp_path):
    x = np.array([1, np.nan, 3], np.float32)
    y = np.array([0, 0, np.nan], np.float32)
    r = export_detail(*sources(x, y), (3,), tmp_path, op_name="z", ground_truth_name="z")
    # errors 1, NaN, NaN and relative inf, NaN, NaN: the NaN and inf read as 0 (the original's nan_to_num)
    assert summary_lines(r.summary_path)[4:] == [
        "MinAbsoluteError:0.000000", "MaxAbsoluteError:1.000000", "MinRelativeError:0.000000",
        "MaxRelativeError:0.000000"]
    assert r.rel_count == 0 and r.top_rel == ()
    assert (r.min_abs_error, r.max_abs_error) == (0.0, 1.0)


@pytest.mark.parametrize("threads", [1, 2])
def test_top_lists_order_and_ties(tmp_path, rng, threads):
    n = 200_000  # several blocks, so both workers keep heaps that are merged
    y = rng.uniform(1, 2, n).astype(np.float32)
    x = y.copy()
    # ties on the absolute error: the same difference at several places, the lower index first
    for i in (150_000, 7, 99_999, 120_001):
        x[i] = y[i] + np.float32(0.5)
        y[i] = np.float32(1.0)
        x[i] = np.float32(1.5)
    x[180_000] = np.nan           # NaN ranks first
    x[60_000] = y[60_000] + 3.0   # the largest number
    y[5] = 0.0                    # undefined relative error: in the absolute list only
    x[5] = 100.0
    r = export_detail(*sources(x, y), (n,), tmp_path, op_name="t", ground_truth_name="t", top_n=6,
                      threads=threads)
    ae, re, defined = errors(x, y)
    assert [e.index for e in r.top_abs] == expected_top(ae, np.ones(n, bool), 6)
    assert [e.index for e in r.top_rel] == expected_top(re, defined, 6)
    assert r.top_abs[0].index == 180_000 and r.top_abs[1].index == 5
    assert [e.index for e in r.top_abs[3:6]] == [7, 99_999, 120_001]
    assert r.top_abs[1].rel_error is None
    top = r.top_abs[2]
    assert (top.coordinates, top.npu, top.ground_truth) == ((60_000, 0, 0, 0), float(x[60_000]), float(y[60_000]))
    assert top.abs_error == ae[60_000] and top.rel_error == re[60_000]
    # the top file holds the same lists, formatted as the detail rows
    with open(r.top_path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["TopBy", "Rank", "Index", "N C H W", "NPUDump", "GroundTruth", "AbsoluteError",
                       "RelativeError"]
    ref = reference_rows(x, y, (n,), original=False)
    expected = [[by, str(k + 1)] + ref[e.index].split(",")
                for by, entries in (("AbsoluteError", r.top_abs), ("RelativeError", r.top_rel))
                for k, e in enumerate(entries)]
    assert rows[1:] == expected


def test_top_n_larger_than_tensor_and_zero(tmp_path, rng):
    x, y = special_pair(rng, (9,))
    r = export_detail(*sources(x, y), (9,), tmp_path / "a", op_name="o", ground_truth_name="o", top_n=50)
    ae, re, defined = errors(x, y)
    assert [e.index for e in r.top_abs] == expected_top(ae, np.ones(9, bool), 50)
    assert len(r.top_abs) == 9 and len(r.top_rel) == int(defined.sum())
    r0 = export_detail(*sources(x, y), (9,), tmp_path / "b", op_name="o", ground_truth_name="o", top_n=0)
    assert r0.top_path is None and r0.top_abs == ()
    assert sorted(os.listdir(tmp_path / "b")) == ["o_output_0_0.csv", "o_output_0_summary.txt"]


def test_top_table_text(tmp_path, rng):
    x = np.array([1, 2, 3, 4], np.float32)
    y = np.array([1, 0, 2.5, 8], np.float32)
    r = export_detail(*sources(x, y), (2, 2), tmp_path, op_name="o", ground_truth_name="o", top_n=2)
    text = format_top_table(r)
    lines = text.splitlines()
    assert lines[0] == "Top 2 absolute errors"
    assert lines[1].split() == ["Rank", "Index", "N", "C", "H", "W", "NPUDump", "GroundTruth", "AbsoluteError",
                                "RelativeError"]
    assert set(lines[2]) == {"-", " "}
    data = [line.split() for line in lines[3:5]]
    assert data == [["1", "3", "1", "1", "0", "0", "4.000000", "8.000000", "4.000000", "0.500000"],
                    ["2", "1", "0", "1", "0", "0", "2.000000", "0.000000", "2.000000", "-"]]
    assert "Top 2 relative errors" in lines
    # columns are aligned: every row of a table has the same width once right-justified
    table = lines[1:5]
    assert len({len(line) for line in table}) == 1
    assert len(format_top_table(r, 1).splitlines()) == len(lines) - 2


# ---- npy --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 2, 2, 3), (7,)])
def test_npy_columns(tmp_path, rng, shape):
    x, y = special_pair(rng, shape)
    r = export_detail(*sources(x, y), shape, tmp_path, op_name="n", ground_truth_name="n", fmt="npy")
    assert r.detail_files == tuple(str(tmp_path / f"n_output_0_{c}.npy") for c in NPY_COLUMNS)
    cols = {name: np.load(p) for name, p in zip(NPY_COLUMNS, r.detail_files)}
    n = x.size
    ae, re, defined = errors(x, y)
    dims = padded_shape(shape)
    assert cols["index"].dtype == np.int64 and cols["coordinates"].dtype == np.int32
    np.testing.assert_array_equal(cols["index"], np.arange(n))
    np.testing.assert_array_equal(cols["coordinates"], np.array(list(np.ndindex(*dims)), np.int32).reshape(n, -1))
    assert cols["npu"].dtype == cols["ground_truth"].dtype == cols["abs_error"].dtype == np.float32
    np.testing.assert_array_equal(cols["npu"], x.ravel())
    np.testing.assert_array_equal(cols["ground_truth"], y.ravel())
    with np.errstate(over="ignore"):  # the tiny ground truth's relative error is beyond float32: inf
        np.testing.assert_array_equal(cols["abs_error"], ae.astype(np.float32))
        np.testing.assert_array_equal(cols["rel_error"], re.astype(np.float32))
    assert np.isnan(cols["rel_error"][~defined]).all()
    with open(r.summary_path) as f:
        assert f.readline() == f"TotalCount:{n}\n"
    # the header is what numpy itself writes: 64-byte aligned, version 1.0
    with open(r.detail_files[2], "rb") as f:
        assert np.lib.format.read_magic(f) == (1, 0)
        assert f.tell() == 8
        np.lib.format.read_array_header_1_0(f)
        assert f.tell() % 64 == 0


def test_npy_and_csv_agree_on_summary_and_top(tmp_path, rng):
    x, y = special_pair(rng, (5, 7))
    a = export_detail(*sources(x, y), (5, 7), tmp_path / "c", op_name="o", ground_truth_name="o")
    b = export_detail(*sources(x, y), (5, 7), tmp_path / "n", op_name="o", ground_truth_name="o", fmt="npy")
    assert summary_lines(a.summary_path) == summary_lines(b.summary_path)
    assert repr(a.top_abs) == repr(b.top_abs) and repr(a.top_rel) == repr(b.top_rel)


# ---- names ------------------------------------------------------------------------------------------------------


def test_names_and_headers():
    assert detail_prefix("a/b", "input", 3) == "a_b_input_3"
    assert coordinate_header((2, 3)) == "N C H W"
    assert coordinate_header((1, 2, 3, 4, 5), "NCDHW") == "N C D H W"
    assert coordinate_header((1, 2, 3, 4, 5, 6), "NCHW") == "D0 D1 D2 D3 D4 D5"
    with pytest.raises(ConfigError):
        detail_prefix("op", "weights", 0)


def test_over_long_names_are_hashed_with_a_mapping(tmp_path, rng):
    op = "layer/" * 40 + "conv"  # 244 characters: the file names pass 255
    x, y = special_pair(rng, (9,))
    r = export_detail(*sources(x, y), (9,), tmp_path, op_name=op, ground_truth_name="gt", max_lines=5)
    prefix = op.replace("/", "_") + "_output_0"
    originals = [f"{prefix}_0.csv", f"{prefix}_1.csv", f"{prefix}_summary.txt", f"{prefix}_top.csv"]
    mapping = naming.read_mapping(tmp_path)
    assert {mapping[os.path.basename(p)] for p in r.files} == set(originals)
    for p, original in zip(r.files, originals):
        name = os.path.basename(p)
        assert name == naming.hashed_name(original) + os.path.splitext(original)[1]
    assert summary_lines(r.summary_path)[1] == f"NPUDump:{op}"
    # a second run with force reuses the same names and rows
    export_detail(*sources(x, y), (9,), tmp_path, op_name=op, ground_truth_name="gt", max_lines=5, force=True)
    with open(tmp_path / naming.MAPPING_FILE) as f:
        assert len(f.read().splitlines()) == 4


# ---- errors leave nothing behind --------------------------------------------------------------------------------


def test_existing_files_need_force(tmp_path, rng):
    x, y = special_pair(rng, (10,))
    export_detail(*sources(x, y), (10,), tmp_path, op_name="o", ground_truth_name="o", max_lines=3)
    before = {p: (tmp_path / p).read_text() for p in os.listdir(tmp_path)}
    with pytest.raises(ConfigError, match="already exists"):
        export_detail(*sources(y, x), (10,), tmp_path, op_name="o", ground_truth_name="o", max_lines=3)
    assert {p: (tmp_path / p).read_text() for p in os.listdir(tmp_path)} == before
    # force replaces them, and the files of the longer earlier export beyond the new last one go
    r = export_detail(*sources(y, x), (10,), tmp_path, op_name="o", ground_truth_name="o", max_lines=5, force=True)
    assert sorted(os.listdir(tmp_path)) == ["o_output_0_0.csv", "o_output_0_1.csv", "o_output_0_summary.txt",
                                            "o_output_0_top.csv"]
    assert [row for part in read_rows(r.detail_files) for row in part] == reference_rows(y, x, (10,))


def test_bad_output_folder(tmp_path, rng):
    x, y = special_pair(rng, (10,))
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="output folder"):
        export_detail(*sources(x, y), (10,), tmp_path / "file" / "sub", op_name="o", ground_truth_name="o")
    with pytest.raises(ConfigError, match="not a folder"):
        export_detail(*sources(x, y), (10,), tmp_path / "file", op_name="o", ground_truth_name="o")


def test_write_failure_leaves_no_files(tmp_path):
    # a file-size limit makes write() fail mid-file, like a full disk; in a child so pytest keeps its limits
    script = f"""
import resource, signal, sys
import numpy as np
from dumpcmp.support.native import core
from dumpcmp.comparison.detail import export_detail
from dumpcmp.errors import DumpcmpError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.RLIM_INFINITY))
x = np.arange(50_000, dtype=np.float32)
try:
    export_detail(core.compare.source_from_array(x), core.compare.source_from_array(x), (50_000,), {str(tmp_path)!r},
                  op_name="o", ground_truth_name="o", max_lines=20_000)
except DumpcmpError as e:
    print(e)
    sys.exit(3)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert "o_output_0_0.csv: cannot write: File too large" in done.stdout
    assert os.listdir(tmp_path) == []


def test_failed_commit_leaves_no_files(tmp_path, rng):
    x, y = special_pair(rng, (10,))
    (tmp_path / "o_output_0_1.csv").mkdir()  # the second file cannot be renamed into place
    with pytest.raises(DumpcmpError, match="o_output_0_1.csv"):
        export_detail(*sources(x, y), (10,), tmp_path, op_name="o", ground_truth_name="o", max_lines=5, force=True)
    assert os.listdir(tmp_path) == ["o_output_0_1.csv"]
    assert os.listdir(tmp_path / "o_output_0_1.csv") == []


def test_mismatched_sides_write_nothing(tmp_path, rng):
    x = rng.standard_normal(10).astype(np.float32)
    y = rng.standard_normal(12).astype(np.float32)
    with pytest.raises(ValueError, match="10 elements"):
        export_detail(*sources(x, y), (10,), tmp_path, op_name="o", ground_truth_name="o")
    with pytest.raises(ValueError, match="shape"):
        export_detail(*sources(y, y), (3, 5), tmp_path, op_name="o", ground_truth_name="o")
    with pytest.raises(ValueError, match="detail file names"):
        core.detail.export_detail(*sources(y, y), shape=[12], csv_paths=[str(tmp_path / "a.csv")], max_rows=5)
    assert os.listdir(tmp_path) == []


def test_ctrl_c_leaves_no_files(tmp_path, rng):
    # one row a file makes the export slow enough to interrupt
    n = 100_000
    x = rng.standard_normal(n).astype(np.float32)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            export_detail(*sources(x, x), (n,), tmp_path, op_name="o", ground_truth_name="o", max_lines=1)
    finally:
        timer.cancel()
    assert os.listdir(tmp_path) == []
