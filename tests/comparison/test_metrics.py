"""The metrics kernel against a plain NumPy reading of the spec's formulas, and against hand-worked examples."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from dumpcmp.errors import ConfigError
from dumpcmp.comparison.metrics import METRICS, format_metric, parse_algorithms
from dumpcmp.comparison.metrics import compare_arrays as _compare_arrays


def compare_arrays(*args, **kwargs):
    """This file checks the `precise` mode (float64 terms) against the float64 reference; the default float32
    terms are checked against the original's float32 formulas in test_metrics_float32.py."""
    kwargs.setdefault("precise", True)
    return _compare_arrays(*args, **kwargs)

EPS = 2.220446049250313e-16
F32_EPS = float(np.finfo(np.float32).eps)
ALL = tuple(range(10))
SUM_METRICS = (0, 2, 3, 4, 6, 7, 9)  # results of sums: equal up to rounding order
MAX_METRICS = (1, 8)  # maxima: the same IEEE operations, equal bit for bit


# ----------------------------------------------------------------------------------------------------------------
# The reference: the spec's formulas, float64 arithmetic on the float32 values, whole arrays at once.


def reference(x, y, *, scalar=False, both_bool=False):
    X = np.asarray(x).astype(np.float32).astype(np.float64).ravel()
    Y = np.asarray(y).astype(np.float32).astype(np.float64).ravel()
    out = dict.fromkeys(ALL, math.nan)
    std = (math.nan,) * 4
    with np.errstate(all="ignore"):
        nx, ny = np.sqrt(np.sum(X * X)), np.sqrt(np.sum(Y * Y))
        if scalar or (nx <= EPS and ny < EPS):
            out[0] = 1.0
        elif np.sqrt(nx) <= EPS or np.sqrt(ny) <= EPS:
            out[0] = math.nan
        else:
            out[0] = float(np.minimum(np.sum((X / nx) * (Y / ny)), 1.0))
        s = np.sum(Y * Y)
        out[3] = 0.0 if np.sqrt(s) <= EPS else float(np.sqrt(np.sum((X - Y) ** 2) / s))
        if both_bool:
            return out, std
        rel = np.where(np.abs(Y) > EPS, np.abs(X / Y - 1.0), 0.0)
        out[1] = float(np.max(np.abs(X - Y)))
        out[2] = float(np.sum(rel))
        out[4] = reference_kld(X, Y)
        std = (float(np.mean(X)), float(np.std(X)), float(np.mean(Y)), float(np.std(Y)))
        out[6] = float(np.mean(np.abs(X - Y)))
        out[7] = float(np.sqrt(np.mean((X - Y) ** 2)))
        out[8] = float(np.max(rel))
        out[9] = float(np.mean(rel))
    return out, std


def reference_kld(X, Y):
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Y))):
        return math.nan

    def normalise(d):
        lo, hi = d.min(), d.max()
        if hi > lo:
            d = (d - lo) / (hi - lo)
        return np.maximum(d, F32_EPS)

    p, q = normalise(X), normalise(Y)
    P, Q = p / p.sum(), q / q.sum()
    return float(np.sum(P * np.log(P / Q)))


def reference_printed(index, value, std=None, *, undefined=False):
    """The spec's printed forms, written independently of the C++ formatter: Python's "%.6f" (`nan`, `inf` for a
    computed NaN or inf), `NaN` for a metric not computed."""
    if undefined:
        return "NaN"
    if index == 5:
        return "(%s;%s),(%s;%s)" % tuple("%.3f" % (0.0 if abs(v) < 0.001 else v) for v in std)
    if index == 4 and math.isfinite(value):
        return "%.6f" % (0.0 if abs(value) < EPS else max(value, 0.0))
    return "%.6f" % value


def check_against_reference(x, y, result, *, scalar=False, both_bool=False, rtol=1e-9):
    ref, ref_std = reference(x, y, scalar=scalar, both_bool=both_bool)
    for i in ALL:
        if i == 5:
            got_std = result.standard_deviation
            np.testing.assert_allclose(got_std, ref_std, rtol=rtol, atol=1e-12, equal_nan=True)
            assert result.format(5) == reference_printed(5, None, ref_std, undefined=both_bool)
            continue
        got = result.value(i)
        if i in MAX_METRICS:
            assert got == ref[i] or (math.isnan(got) and math.isnan(ref[i])), (METRICS[i], got, ref[i])
        elif i == 4 and not math.isnan(ref[i]) and abs(ref[i]) < 1e-12:
            assert abs(got) < 1e-12, (got, ref[i])
        else:
            np.testing.assert_allclose(got, ref[i], rtol=rtol, atol=1e-13, equal_nan=True, err_msg=METRICS[i])
        undefined = (both_bool and i not in (0, 3)) or (i == 0 and _cosine_side_zero(x, y, scalar))
        want = reference_printed(i, ref[i], undefined=undefined)
        if i == 0 and _cosine_both_zero(x, y, scalar):
            want = "1.0"  # the original returns this literal text, not "%.6f" % 1
        assert result.format(i) == want, (METRICS[i], result.format(i), ref[i])


def _norms(x, y):
    X = np.asarray(x).astype(np.float32).astype(np.float64).ravel()
    Y = np.asarray(y).astype(np.float32).astype(np.float64).ravel()
    with np.errstate(all="ignore"):
        return np.sqrt(np.sum(X * X)), np.sqrt(np.sum(Y * Y))


def _cosine_both_zero(x, y, scalar):
    nx, ny = _norms(x, y)
    return not scalar and nx <= EPS and ny < EPS


def _cosine_side_zero(x, y, scalar):
    """The spec's "all the data is zero" case of the cosine: not computed, `NaN`."""
    X = np.asarray(x).astype(np.float32).astype(np.float64).ravel()
    Y = np.asarray(y).astype(np.float32).astype(np.float64).ravel()
    with np.errstate(all="ignore"):
        nx, ny = np.sqrt(np.sum(X * X)), np.sqrt(np.sum(Y * Y))
    return not scalar and not (nx <= EPS and ny < EPS) and (np.sqrt(nx) <= EPS or np.sqrt(ny) <= EPS)


# ----------------------------------------------------------------------------------------------------------------
# Random data, every size shape around the chunk and lane boundaries


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 63, 64, 65, 1000, 4097])
@pytest.mark.parametrize("chunk", [1, 8, 64, 65536])
def test_random_against_reference(n, chunk):
    rng = np.random.default_rng(n * 7 + chunk)
    y = rng.standard_normal(n).astype(np.float32) * 3 + 0.5
    x = (y + rng.standard_normal(n).astype(np.float32) * 0.05).astype(np.float32)
    result = compare_arrays(x, y, chunk_elements=chunk)
    assert result.count == n
    check_against_reference(x, y, result)


def test_large_values_and_offsets():
    rng = np.random.default_rng(3)
    y = (1e4 + rng.standard_normal(100_003)).astype(np.float32)
    x = (y * 1.001).astype(np.float32)
    check_against_reference(x, y, compare_arrays(x, y, chunk_elements=1000))


def test_constant_large_data_has_zero_std():
    # sum(x^2)/n - mean^2 would give noise around 0.01 here; the printed std must be 0
    x = np.full(300_001, 1e6, np.float32)
    r = compare_arrays(x, x, chunk_elements=4096)
    assert r.std_x == 0.0 and r.mean_x == 1e6
    assert r.format(5) == "(1000000.000;0.000),(1000000.000;0.000)"


def test_extra_metrics():
    rng = np.random.default_rng(5)
    y = rng.standard_normal(10_001).astype(np.float32)
    x = (y + rng.standard_normal(10_001).astype(np.float32) * 0.1).astype(np.float32)
    r = compare_arrays(x, y, chunk_elements=512)
    X, Y = x.astype(np.float64), y.astype(np.float64)
    mse = np.mean((X - Y) ** 2)
    assert r.mse == pytest.approx(mse, rel=1e-12)
    assert r.sqnr_db == pytest.approx(10 * np.log10(np.sum(Y * Y) / np.sum((X - Y) ** 2)), rel=1e-12)
    assert (r.min_x, r.max_x, r.min_y, r.max_y) == (X.min(), X.max(), Y.min(), Y.max())
    assert compare_arrays(y, y).sqnr_db == math.inf


# ----------------------------------------------------------------------------------------------------------------
# Hand-worked examples: printed strings


def test_hand_worked_small_example():
    x = np.array([1, 2, 3, 4], np.float32)
    y = np.array([1, 2, 3, 5], np.float32)
    r = compare_arrays(x, y)
    # cos = 34 / sqrt(30 * 39); RED = sqrt(1/39); KLD = (log(7/6) + log(7/8)) / 2 = log(49/48) / 2 (+ ~1e-8 from eps)
    assert r.formatted() == [
        "0.993999",
        "1.000000",
        "0.200000",
        "0.160128",
        "0.010310",
        "(2.500;1.118),(2.750;1.479)",
        "0.250000",
        "0.500000",
        "0.200000",
        "0.050000",
    ]
    assert 34 / math.sqrt(1170) == pytest.approx(0.993999, abs=5e-7)
    assert math.log(49 / 48) / 2 == pytest.approx(0.010310, abs=5e-7)


def test_one_side_all_zero():
    r = compare_arrays(np.zeros(2, np.float32), np.array([1, 2], np.float32))
    # KLD: the zero side clamps to a uniform P = (1/2, 1/2) against Q = (eps, 1) / (1 + eps), a number
    q = np.array([F32_EPS, 1.0]) / (1 + F32_EPS)
    assert "%.6f" % float(np.sum(0.5 * np.log(0.5 / q))) == "7.278046"
    assert r.formatted() == [
        "NaN", "2.000000", "2.000000", "1.000000", "7.278046", "(0.000;0.000),(1.500;0.500)",
        "1.500000", "1.581139", "1.000000", "1.000000",
    ]


def test_ground_truth_all_zero():
    r = compare_arrays(np.array([1, -1], np.float32), np.zeros(2, np.float32))
    # relative terms are 0 where |y| <= EPS; RED is 0 when sum(y^2) is
    assert r.formatted()[:4] == ["NaN", "1.000000", "0.000000", "0.000000"]
    assert r.formatted()[5:] == ["(0.000;1.000),(0.000;0.000)", "1.000000", "1.000000", "0.000000", "0.000000"]
    # KLD of P = (eps, 1)/(1 + eps) against a uniform Q: log(2) + sum P log P, a number
    p = np.array([F32_EPS, 1.0]) / (1 + F32_EPS)
    assert r.format(4) == "%.6f" % (math.log(2) + float(np.sum(p * np.log(p))))


def test_both_all_zero():
    z = np.zeros(5, np.float32)
    r = compare_arrays(z, z)
    assert r.formatted() == [  # the original's literal "1.0" for two zero norms; two uniform distributions: KLD 0
        "1.0", "0.000000", "0.000000", "0.000000", "0.000000", "(0.000;0.000),(0.000;0.000)",
        "0.000000", "0.000000", "0.000000", "0.000000",
    ]


def test_small_means_print_as_zero_without_sign():
    x = np.array([-0.0004, -0.0004], np.float32)
    r = compare_arrays(x, x)
    assert r.format(5) == "(0.000;0.000),(0.000;0.000)"
    assert r.format(4) == "0.000000"  # constant sides: both uniform, divergence exactly 0


def test_scalar_cosine_is_one():
    x, y = np.array(3.0, np.float32), np.array(-2.0, np.float32)
    r = compare_arrays(x, y)
    assert r.scalar and r.format(0) == "1.000000"
    assert r.format(1) == "5.000000"
    # the same values as 1-element vectors follow the formula: opposite signs give -1
    assert compare_arrays(x.reshape(1), y.reshape(1)).format(0) == "-1.000000"
    assert compare_arrays(x.reshape(1), y.reshape(1), scalar=True).format(0) == "1.000000"


@pytest.mark.parametrize("value", [0.0, 2.5, -7.0])
def test_single_element(value):
    x = np.array([value], np.float32)
    y = np.array([1.5], np.float32)
    check_against_reference(x, y, compare_arrays(x, y))


def test_bool_pair_gets_cosine_and_distance_only():
    x = np.array([True, False, True])
    y = np.array([True, True, False])
    r = compare_arrays(x, y)
    assert r.both_bool
    assert r.formatted() == ["0.500000", "NaN", "NaN", "1.000000", "NaN", "NaN", "NaN", "NaN", "NaN", "NaN"]
    check_against_reference(x, y, r, both_bool=True)


def test_bool_against_float_is_compared_as_values():
    x = np.array([True, False, True, True])
    y = np.array([1.0, 0.5, 0.0, 1.0], np.float32)
    r = compare_arrays(x, y)
    assert not r.both_bool
    check_against_reference(x, y, r)


def test_empty_tensors_give_nan():
    e = np.zeros(0, np.float32)
    r = compare_arrays(e, e)
    assert r.count == 0 and r.formatted() == ["NaN"] * 10


# ----------------------------------------------------------------------------------------------------------------
# NaN and inf


def test_nan_in_my_output():
    x = np.array([1, np.nan, 3], np.float32)
    y = np.array([1, 2, 3], np.float32)
    r = compare_arrays(x, y)
    assert (r.nan_x, r.inf_x, r.nan_y, r.inf_y) == (1, 0, 0, 0)
    assert r.formatted() == [  # computed NaN: Python's "%.6f" spelling, not the "not computed" marker
        "nan", "nan", "nan", "nan", "nan", "(nan;nan),(2.000;0.816)", "nan", "nan", "nan", "nan",
    ]
    check_against_reference(x, y, r)


def test_nan_in_ground_truth_leaves_relative_terms_at_zero():
    # |NaN| > EPS is false: the spec's relative term is 0 there, as the detail file's "-" for a NaN ground truth
    x = np.array([1, 2, 3], np.float32)
    y = np.array([1, np.nan, 3], np.float32)
    r = compare_arrays(x, y)
    assert r.nan_y == 1
    assert r.format(2) == "0.000000" and r.format(8) == "0.000000"
    assert r.format(1) == "nan"
    check_against_reference(x, y, r)


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_inf_prints_as_python_does(bad):
    x = np.array([1, bad, 3, 4], np.float32)
    y = np.array([1, 2, 3, 5], np.float32)
    r = compare_arrays(x, y)
    assert r.inf_x == 1 and r.nan_x == 0
    assert r.max_absolute_error == math.inf
    assert r.format(1) == "inf" and r.format(4) == "nan" and r.format(0) == "nan"
    assert r.format(5).startswith("(%s;nan)," % ("inf" if bad > 0 else "-inf"))
    assert r.mean_x == bad
    check_against_reference(x, y, r)


def test_nan_and_inf_in_big_chunked_data_and_counts():
    rng = np.random.default_rng(11)
    x = rng.standard_normal(50_000).astype(np.float32)
    y = x.copy()
    x[[5, 40_000]] = np.nan
    x[[7, 7000, 49_999]] = np.inf
    y[[123]] = -np.inf
    r = compare_arrays(x, y, chunk_elements=1000)
    assert (r.nan_x, r.inf_x, r.nan_y, r.inf_y) == (2, 3, 0, 1)
    check_against_reference(x, y, r)


# ----------------------------------------------------------------------------------------------------------------
# Data types: the kernel reads each side as float32


def _random_pair(n, seed):
    rng = np.random.default_rng(seed)
    y = (rng.standard_normal(n) * 20).astype(np.float32)
    x = (y + rng.standard_normal(n).astype(np.float32)).astype(np.float32)
    return x, y


def _as(dtype, values):
    if dtype == "bf16":
        return values.astype(ml_dtypes.bfloat16)
    if dtype == "bool":
        return values > 0
    if np.dtype(dtype).kind in "iu":
        return np.clip(np.round(values), np.iinfo(dtype).min, np.iinfo(dtype).max).astype(dtype)
    return values.astype(dtype)


DTYPES = ["float16", "bf16", "float32", "float64", "int8", "int32", "bool"]


@pytest.mark.parametrize("x_dtype", DTYPES)
@pytest.mark.parametrize("y_dtype", DTYPES)
def test_dtype_pairs(x_dtype, y_dtype):
    x0, y0 = _random_pair(3001, hash((x_dtype, y_dtype)) % 1000)
    x, y = _as(x_dtype, x0), _as(y_dtype, y0)
    both_bool = x_dtype == y_dtype == "bool"
    r = compare_arrays(x, y, chunk_elements=256)
    check_against_reference(x.astype(np.float32), y.astype(np.float32), r, both_bool=both_bool)


@pytest.mark.parametrize("name,dtype", [("BF16", ml_dtypes.bfloat16), ("FLOAT16", np.float16),
                                        ("FLOAT8_E4M3FN", ml_dtypes.float8_e4m3fn),
                                        ("FLOAT8_E5M2", ml_dtypes.float8_e5m2)])
def test_raw_device_bytes(name, dtype):
    x0, y0 = _random_pair(2049, 4)
    device = x0.astype(dtype)
    raw = device.view(np.uint8)
    r = compare_arrays(raw, y0, x_data_type=name, chunk_elements=100)
    check_against_reference(device.astype(np.float32), y0, r)
    # the same values as a typed array (ml_dtypes' dtypes are recognised) give the same bits
    assert repr(compare_arrays(device, y0, chunk_elements=100).values()) == repr(r.values())


def test_raw_bytes_on_both_sides():
    x0, y0 = _random_pair(1000, 8)
    xb, yb = x0.astype(ml_dtypes.bfloat16), y0.astype(np.float16)
    r = compare_arrays(xb.view(np.uint8), yb.view(np.uint8), x_data_type="BF16", y_data_type="FLOAT16")
    assert r.count == 1000
    check_against_reference(xb.astype(np.float32), yb.astype(np.float32), r)


def test_packed_int4_needs_a_count_and_decodes_low_nibble_first():
    values = np.array([-8, 7, 0, 3, -1], np.int8)
    nibbles = (values & 0xF).astype(np.uint8)
    packed = np.zeros(3, np.uint8)
    for i, v in enumerate(nibbles):
        packed[i // 2] |= v << (4 * (i % 2))
    y = values.astype(np.float32) + 0.25
    r = compare_arrays(packed, y, x_data_type="INT4")
    check_against_reference(values, y, r)
    with pytest.raises(ValueError, match="count"):
        compare_arrays(packed, packed, x_data_type="INT4", y_data_type="INT4")
    assert compare_arrays(packed, packed, x_data_type="INT4", y_data_type="INT4", count=5).format(1) == "0.000000"


# ----------------------------------------------------------------------------------------------------------------
# Reproducibility


@pytest.mark.parametrize("chunk", [1000, 65536])
def test_thread_count_does_not_change_a_bit(chunk):
    x0, y0 = _random_pair(300_001, 21)
    x = x0.astype(np.float16)
    outs = set()
    for threads in (1, 2, 3):
        r = compare_arrays(x, y0, threads=threads, chunk_elements=chunk)
        outs.add(repr((r.values(), r.mse, r.sqnr_db, r.min_x, r.max_y, r.formatted())))
    assert len(outs) == 1


def test_chunk_size_changes_rounding_only():
    x, y = _random_pair(100_000, 22)
    a = compare_arrays(x, y, chunk_elements=7)
    b = compare_arrays(x, y, chunk_elements=65536)
    for i in ALL:
        np.testing.assert_allclose(np.asarray(a.value(i)), np.asarray(b.value(i)), rtol=1e-11, atol=1e-13)
    assert a.formatted() == b.formatted()


# ----------------------------------------------------------------------------------------------------------------
# Selection, names, formatting API


def test_metric_table_is_the_spec_order():
    assert METRICS == {
        0: "CosineSimilarity", 1: "MaxAbsoluteError", 2: "AccumulatedRelativeError",
        3: "RelativeEuclideanDistance", 4: "KullbackLeiblerDivergence", 5: "StandardDeviation",
        6: "MeanAbsoluteError", 7: "RootMeanSquareError", 8: "MaxRelativeError", 9: "MeanRelativeError",
    }


def test_parse_algorithms():
    assert parse_algorithms("0,1,2") == (0, 1, 2)
    assert parse_algorithms("4, 0,4") == (0, 4)
    assert parse_algorithms(None) == ALL
    assert parse_algorithms("") == ALL
    assert parse_algorithms(["CosineSimilarity", 9]) == (0, 9)
    for bad in ("10", "-1", "x", "0,,11"):
        with pytest.raises(ConfigError, match="not one of the built-in metrics"):
            parse_algorithms(bad)


def test_selection_leaves_others_nan():
    x, y = _random_pair(1000, 30)
    r = compare_arrays(x, y, metrics="3,0")
    assert r.metrics == [0, 3]
    assert len(r.values()) == 2 and len(r.formatted()) == 2
    assert math.isnan(r.kullback_leibler_divergence) and math.isnan(r.max_absolute_error)
    assert r.format(4) == "NaN"
    full = compare_arrays(x, y)
    assert r.formatted() == [full.format(0), full.format(3)]
    assert format_metric(0, r) == r.format(0)
    with pytest.raises(IndexError):
        r.format(10)


# ----------------------------------------------------------------------------------------------------------------
# Bad input


def test_bad_input_errors():
    x = np.zeros(10, np.float32)
    with pytest.raises(ValueError, match="C-contiguous"):
        compare_arrays(np.zeros(20, np.float32)[::2], x)
    with pytest.raises(ValueError, match="elements"):
        compare_arrays(np.zeros(9, np.float32), x)
    with pytest.raises(ValueError, match="unknown data type name"):
        compare_arrays(x.view(np.uint8), x, x_data_type="FLOAT99")
    with pytest.raises(ValueError, match="bytes"):
        compare_arrays(np.zeros(7, np.uint8), x, x_data_type="FLOAT16")
    with pytest.raises(ValueError, match="big-endian"):
        compare_arrays(x.astype(">f4"), x)
    with pytest.raises(ValueError, match="dtype"):
        compare_arrays(x.astype(np.complex64), x)
    with pytest.raises(ValueError, match="no numeric value"):
        compare_arrays(np.zeros(4, np.uint8), x[:4], x_data_type="STRING")
    with pytest.raises(ValueError, match="threads"):
        compare_arrays(x, x, threads=-1)


# ----------------------------------------------------------------------------------------------------------------
# The benchmark's NumPy baseline must compute the same metrics, or its speed comparison means nothing


def test_benchmark_baseline_matches_kernel():
    from dumpcmp.benchmark.compare import numpy_metrics, parse_size, run_compare_benchmark

    x, y = _random_pair(5000, 40)
    base = numpy_metrics(x.astype(np.float16), y)
    r = compare_arrays(x.astype(np.float16), y)
    for i in ALL:
        expected = r.std_x if i == 5 else r.value(i)
        assert base[i] == pytest.approx(expected, rel=1e-9, abs=1e-13), METRICS[i]
    assert parse_size("512MB") == 512 << 20 and parse_size("2GB") == 2 << 30 and parse_size("4096") == 4096
    bench = run_compare_benchmark(1 << 16, threads=(1,), repeat=1, reference_elements=1 << 12)
    assert {m.name for m in bench.results} >= {"memory-read probe (C++)", "kernel fp16 vs fp32, 10 metrics"}
    assert all(m.gb_per_s > 0 for m in bench.results)


# ----------------------------------------------------------------------------------------------------------------
# The vectorised kernel: instruction-set levels, float16 decoded in registers, adversarial data


def _hexes(v):
    return [_hexes(e) for e in v] if isinstance(v, (tuple, list)) else float(v).hex()


def _fingerprint(r):
    """Every number a result holds, bit for bit, and its printed form."""
    numbers = list(r.values()) + [r.mean_x, r.std_x, r.mean_y, r.std_y, r.mse, r.sqnr_db,
                                  r.min_x, r.max_x, r.min_y, r.max_y]
    return (_hexes(numbers), r.count, r.nan_x, r.inf_x, r.nan_y, r.inf_y, list(r.formatted()))


# Run in a fresh interpreter per level: DUMPCMP_SIMD is read once per process.
_LEVEL_SCRIPT = r"""
import json
import ml_dtypes
import numpy as np
from dumpcmp.comparison.metrics import compare_arrays

def hexes(v):
    return [hexes(e) for e in v] if isinstance(v, (tuple, list)) else float(v).hex()

def fingerprint(r):
    numbers = list(r.values()) + [r.mean_x, r.std_x, r.mean_y, r.std_y, r.mse, r.sqnr_db,
                                  r.min_x, r.max_x, r.min_y, r.max_y]
    return (hexes(numbers), r.count, r.nan_x, r.inf_x, r.nan_y, r.inf_y, list(r.formatted()))

rng = np.random.default_rng(40)
codes = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
finite = codes[np.isfinite(codes)]
y = (rng.standard_normal(100_003) * 3).astype(np.float32)
x = (y + rng.standard_normal(y.size).astype(np.float32) * 0.05).astype(np.float32)
onehot = np.zeros(37, np.float32); onehot[5] = 1
# whole blocks whose min (max) is a zero of either sign: which comes first decides the printed sign, on every level
zeros = np.abs(y[:3 * 8192 + 5])
zeros[rng.random(zeros.size) < 0.3] = 0
zeros[(zeros == 0) & (rng.random(zeros.size) < 0.5)] = -0.0
# differences and deviations that are not exact in double: contracting a*b+c into an FMA would change the bits
wide = (10.0 ** rng.uniform(-30, 3, 50_001) * rng.choice([-1.0, 1.0], 50_001)).astype(np.float32)
cases = [
    (wide, (wide * np.float32(1.001) + np.float32(1e-3)).astype(np.float32), {}),
    (x, y, {}),
    (x, y, {"chunk_elements": 1000, "threads": 2}),
    (x.astype(np.float16), y, {}),
    (x, x.astype(np.float16), {"chunk_elements": 4099}),
    (x.astype(ml_dtypes.bfloat16), y, {}),
    (codes, (rng.standard_normal(codes.size) * 100).astype(np.float32), {}),
    (finite, (rng.standard_normal(finite.size) * 100).astype(np.float32), {}),
    ((y + 1e4).astype(np.float32), (x + 1e4).astype(np.float32), {}),
    (x[:13], y[:13], {}),
    (onehot, np.full(37, 0.5, np.float32), {}),
    (zeros, -zeros, {}),
    (zeros.astype(np.float16), -zeros, {}),
]
print(json.dumps([fingerprint(compare_arrays(a, b, precise=p, **kw)) for p in (False, True) for a, b, kw in cases]))
"""


def test_instruction_set_levels_give_the_same_bits():
    import os
    import subprocess
    import sys

    outputs = {}
    for level in ("scalar", "avx2", "avx512"):
        env = dict(os.environ, DUMPCMP_SIMD=level)
        done = subprocess.run([sys.executable, "-c", _LEVEL_SCRIPT], env=env, capture_output=True, text=True,
                              check=True)
        outputs[level] = done.stdout
    assert outputs["scalar"].startswith("[[")
    assert outputs["scalar"] == outputs["avx2"] == outputs["avx512"]


# Lengths around the kernels' steps of 16 and the narrow levels' tiles of 4096 elements (their accumulator
# groups run as separate loops per tile), float32 and float16 storage, NaN/inf inside and in the tail.
_LENGTHS_SCRIPT = r"""
import json
import numpy as np
from dumpcmp.comparison.metrics import compare_arrays

def hexes(v):
    return [hexes(e) for e in v] if isinstance(v, (tuple, list)) else float(v).hex()

rng = np.random.default_rng(43)
out = []
for n in (1, 7, 8, 9, 15, 16, 17, 31, 33, 4095, 4096, 4097, 4111, 8192 + 24, 3 * 4096 + 5):
    y = (rng.standard_normal(n) * 2).astype(np.float32)
    x = (y + rng.standard_normal(n).astype(np.float32) * 0.01).astype(np.float32)
    special = x.copy()
    special[n // 2] = np.nan
    special[-1] = np.inf
    pairs = ((x, y), (x.astype(np.float16), y), (special, y), (y, special.astype(np.float16)))
    for (a, b), precise in ((pair, p) for pair in pairs for p in (False, True)):
        r = compare_arrays(a, b, chunk_elements=5000, precise=precise)
        numbers = list(r.values()) + [r.mean_x, r.std_x, r.mean_y, r.std_y, r.min_x, r.max_x, r.min_y, r.max_y]
        out.append((hexes(numbers), r.nan_x, r.inf_x, r.nan_y, r.inf_y))
print(json.dumps(out))
"""


def test_levels_agree_around_steps_and_tiles():
    import os
    import subprocess
    import sys

    outputs = {}
    for level in ("scalar", "avx2", "avx512"):
        env = dict(os.environ, DUMPCMP_SIMD=level)
        done = subprocess.run([sys.executable, "-c", _LENGTHS_SCRIPT], env=env, capture_output=True, text=True,
                              check=True)
        outputs[level] = done.stdout
    assert outputs["scalar"].startswith("[[")
    assert outputs["scalar"] == outputs["avx2"] == outputs["avx512"]


def test_tile_boundaries_against_reference():
    # one tile plus a partial step: every accumulator group must see every element exactly once
    rng = np.random.default_rng(44)
    for n in (4096 + 16, 4096 * 2 + 9):
        y = (rng.standard_normal(n) * 3).astype(np.float32)
        x = (y + rng.standard_normal(n).astype(np.float32) * 0.05).astype(np.float32)
        check_against_reference(x, y, compare_arrays(x, y))


def test_float16_in_registers_matches_the_float32_path():
    # every float16 code, NaN and inf included, on either side; the float32 copy goes through the plain loads
    rng = np.random.default_rng(41)
    codes = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    other = (rng.standard_normal(codes.size) * 100).astype(np.float32)
    for chunk in (1000, 65536):
        a = compare_arrays(codes, other, chunk_elements=chunk)
        b = compare_arrays(codes.astype(np.float32), other, chunk_elements=chunk)
        assert _fingerprint(a) == _fingerprint(b)
        a = compare_arrays(other, codes, chunk_elements=chunk)
        b = compare_arrays(other, codes.astype(np.float32), chunk_elements=chunk)
        assert _fingerprint(a) == _fingerprint(b)
    assert a.nan_y == 2 * 1023 and a.inf_y == 2


def test_wide_dynamic_range_against_reference():
    rng = np.random.default_rng(42)
    n = 50_001
    y = (10.0 ** rng.uniform(-30, 3, n) * rng.choice([-1.0, 1.0], n)).astype(np.float32)
    x = (y * (1 + 1e-3 * rng.standard_normal(n))).astype(np.float32)
    check_against_reference(x, y, compare_arrays(x, y, chunk_elements=4096))


def test_large_offset_small_spread_against_reference():
    rng = np.random.default_rng(43)
    y = (1e6 + rng.standard_normal(200_001) * 0.01).astype(np.float32)
    x = (y + rng.standard_normal(y.size).astype(np.float32) * 0.125).astype(np.float32)
    check_against_reference(x, y, compare_arrays(x, y))


def _kld_shapes(rng, n):
    yield np.eye(1, n, int(rng.integers(n)), dtype=np.float32)[0], np.full(n, 0.5, np.float32)
    yield np.full(n, 0.5, np.float32), np.eye(1, n, int(rng.integers(n)), dtype=np.float32)[0]
    yield rng.exponential(1, n).astype(np.float32), rng.exponential(1, n).astype(np.float32)
    heavy = rng.pareto(0.7, n).astype(np.float32)
    yield heavy, np.flip(heavy).copy()
    yield (rng.standard_normal(n) * 1e-3).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    base = rng.standard_normal(n).astype(np.float32)
    yield base, (base + np.float32(1e-4) * rng.standard_normal(n).astype(np.float32)).astype(np.float32)


def test_kld_on_adversarial_distributions_prints_like_numpy():
    rng = np.random.default_rng(44)
    for n in (2, 3, 5, 16, 17, 40, 1000, 65537):
        for x, y in _kld_shapes(rng, n):
            r = compare_arrays(x, y)
            ref = reference_kld(x.astype(np.float64), y.astype(np.float64))
            assert r.format(4) == reference_printed(4, ref), (n, r.format(4), ref)
            np.testing.assert_allclose(r.value(4), ref, rtol=1e-9, atol=1e-12)


def test_hundred_million_constant_elements():
    x = np.full(100_000_000, 1234.5, np.float32)
    r = compare_arrays(x, x)
    assert r.count == x.size and r.mean_x == 1234.5 and r.std_x == 0.0
    assert list(r.formatted()) == ["1.000000", "0.000000", "0.000000", "0.000000", "0.000000",
                                   "(1234.500;0.000),(1234.500;0.000)", "0.000000", "0.000000", "0.000000",
                                   "0.000000"]


def test_thirty_million_constant_pairs_sum_like_exact_arithmetic():
    from fractions import Fraction

    n = 30_000_001
    x = np.full(n, 1000.5, np.float32)
    y = np.full(n, 1000.0, np.float32)
    r = compare_arrays(x, y)
    term = abs(1000.5 / 1000.0 - 1.0)  # the double the reference sums n times
    exact = Fraction(term) * n
    assert r.format(2) == "%.6f" % float(exact)
    assert r.format(1) == "0.500000" and r.format(6) == "0.500000" and r.format(7) == "0.500000"
    assert r.format(8) == "%.6f" % term and r.format(0) == "1.000000"
    assert r.format(5) == "(1000.500;0.000),(1000.000;0.000)"


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_unaligned_device_bytes_give_the_same_bits(offset):
    # dump payloads sit at any byte offset of the mapped file; the vector loads must not care
    x, y = _random_pair(70_001, 45)
    for name, typed in (("FLOAT16", x.astype(np.float16)), ("FLOAT", x)):
        raw = np.zeros(typed.nbytes + offset, np.uint8)
        raw[offset:] = typed.view(np.uint8)
        shifted = compare_arrays(raw[offset:], y, x_data_type=name)
        assert _fingerprint(shifted) == _fingerprint(compare_arrays(typed, y)), name


# ----------------------------------------------------------------------------------------------------------------
# The KLD pass's two forms of log(p/q): the division-free one for groups of 16 whose values are within ~3% of each
# other, the general one elsewhere. Which one runs depends on the values only; both must print like NumPy.

_KLD_SCRIPT = r"""
import json
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import dumpcmp_testhooks
from dumpcmp.comparison.metrics import compare_arrays

rng = np.random.default_rng(46)
base = rng.standard_normal(200_003).astype(np.float32)
cases = [
    (base, (base + np.float32(1e-3) * rng.standard_normal(base.size).astype(np.float32)).astype(np.float32), {}),
    (base, base.astype(np.float16), {"chunk_elements": 4099}),
    (base, base, {}),
    (base, (base * np.float32(1.0001) + np.float32(2e-3)).astype(np.float32), {"threads": 2, "chunk_elements": 1000}),
    (base, rng.standard_normal(base.size).astype(np.float32), {}),
    (np.abs(base) ** 3, (np.abs(base) ** 3 * np.float32(1.01)).astype(np.float32), {}),
]
out = []
for x, y, kw in cases:
    r = compare_arrays(x, y, **kw)
    out.append([float(r.value(4)).hex(), r.format(4)])
print(json.dumps([out, dumpcmp_testhooks.kld_general_only()]))
"""


def _run_kld_script(**env_extra):
    import json
    import os
    import subprocess
    import sys

    from helpers import native_hooks

    env = dict(os.environ, **env_extra)
    hooks = os.path.dirname(native_hooks.load().__file__)
    done = subprocess.run([sys.executable, "-c", _KLD_SCRIPT, hooks], env=env, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def test_kld_forms_agree_and_every_level_gives_the_same_bits():
    fast = {level: _run_kld_script(DUMPCMP_SIMD=level) for level in ("scalar", "avx2", "avx512")}
    general = _run_kld_script(DUMPCMP_KLD="general")
    assert general[1] is True and fast["avx512"][1] is False
    assert fast["scalar"] == fast["avx2"] == fast["avx512"]
    for (fast_hex, fast_text), (general_hex, general_text) in zip(fast["avx512"][0], general[0]):
        assert fast_text == general_text
        a, b = float.fromhex(fast_hex), float.fromhex(general_hex)
        assert abs(a - b) <= 1e-12 * abs(b) + 1e-15, (a, b)


def _kld_counts(x, y, **kw):
    from helpers import native_hooks

    r = compare_arrays(x, y, **kw)
    # the same pass in the hook module's own copy of the core, whose counters it reads
    close, general = native_hooks.load().kld_group_counts_of(x, y, **(kw | {"precise": r.precise}))
    return r, close, general


def test_kld_close_form_is_taken_on_close_data_and_prints_like_numpy():
    rng = np.random.default_rng(47)
    for n in (16, 17, 1000, 65536, 65537, 300_001):
        y = rng.standard_normal(n).astype(np.float32)
        for x in ((y + np.float32(1e-3) * rng.standard_normal(n).astype(np.float32)).astype(np.float32),
                  y.astype(np.float16).astype(np.float32), y.copy()):
            r, close, general = _kld_counts(x, y)
            assert close + general == -(-n // 16) * 1  # one count per group of 16 (the last may be partial)
            # only each block's partial tail and the groups around each side's minimum leave the close form
            assert general <= 2 + 2 * (-(-n // 65536)) + n // 2000, (n, close, general)
            ref = reference_kld(x.astype(np.float64), y.astype(np.float64))
            assert r.format(4) == reference_printed(4, ref), (n, r.format(4), ref)
            np.testing.assert_allclose(r.value(4), ref, rtol=1e-9, atol=1e-13)


def test_kld_exact_copy_is_zero_through_the_close_form():
    x = np.random.default_rng(48).standard_normal(100_000).astype(np.float32)
    r, close, general = _kld_counts(x, x.copy())
    assert general <= 2 and r.value(4) == 0.0 and r.format(4) == "0.000000"


def test_kld_general_form_is_taken_on_unrelated_data():
    rng = np.random.default_rng(49)
    x = rng.standard_normal(100_000).astype(np.float32)
    y = rng.standard_normal(100_000).astype(np.float32)
    r, close, general = _kld_counts(x, y)
    assert general > 0.99 * (close + general)
    ref = reference_kld(x.astype(np.float64), y.astype(np.float64))
    assert r.format(4) == reference_printed(4, ref)


def test_kld_near_the_close_limit_and_the_floor_prints_like_numpy():
    # ratios p/q straddling the form's limit (|s| = 1/64, p/q ~ 1.032), values at the eps floor, heavy tails
    rng = np.random.default_rng(50)
    n = 65_536 * 3 + 5
    y = rng.uniform(1.0, 2.0, n).astype(np.float32)
    y[0], y[1] = 0.0, 4.0  # fixes min and max of both sides
    # s = (ratio - 1)/(ratio + 1): 1.0312 and 0.9694 are inside the limit, 1.0318 and 0.9691 outside
    for ratio, close_form in ((1.0312, True), (1.0318, False), (1.033, False), (0.9694, True), (0.9691, False)):
        x = (y * np.float32(ratio)).astype(np.float32)
        x[0], x[1] = 0.0, 4.0  # the same min and max: p/q = ratio away from the first group
        ref = reference_kld(x.astype(np.float64), y.astype(np.float64))
        r, close, general = _kld_counts(x, y)
        assert (general <= 4) == close_form, (ratio, close, general)
        assert r.format(4) == reference_printed(4, ref), (ratio, r.format(4), ref)
        np.testing.assert_allclose(r.value(4), ref, rtol=1e-9, atol=1e-13)
    tiny = np.full(n, 1e-9, np.float32)
    tiny[::7] = 1.0
    other = tiny.copy()
    other[::11] = 2e-9
    ref = reference_kld(tiny.astype(np.float64), other.astype(np.float64))
    r = compare_arrays(tiny, other)
    assert r.format(4) == reference_printed(4, ref)
    np.testing.assert_allclose(r.value(4), ref, rtol=1e-9, atol=1e-13)
