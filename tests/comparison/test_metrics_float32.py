"""The default metrics (float32 per-element terms) against the original tool's formulas, re-implemented in NumPy.

The reference below follows the original's code (metrics-and-outputs.md): both sides as float32 arrays, every
term a NumPy float32 operation (x / y, x - y, |.|, squares, products, KLD's normalisation, clamp, P, Q and log),
float32 results. Its sums are the original's: `np.sum` of float32 arrays under NumPy 1.x, the NumPy 1.26 that made
the oracle outputs (float32 pairwise sums of blocks of 8192, added in order: `numpy1_sum`, test_numpy_sums.py);
`sums="float64"` sums in float64 and rounds to float32 instead. NumPy 1.x scalar rules too: a float32 sum divided
by the count in float64, `** 0.5` of a float32 scalar in float64. The float64 reference of `--precise` lives in
test_metrics.py.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from dumpcmp.comparison.metrics import compare_arrays
from test_numpy_sums import numpy1_sum

EPS = 2.220446049250313e-16
F32_EPS = np.float32(np.finfo(np.float32).eps)
ALL = tuple(range(10))
F32 = np.float32


def original32(x, y, *, scalar=False, sums="float32"):
    """The ten metrics as the original computes them. Returns {index: float or None (not computed)} with index 5
    the tuple (mean_x, std_x, mean_y, std_y)."""
    X = np.asarray(x).astype(F32).ravel()
    Y = np.asarray(y).astype(F32).ravel()

    def total(a):
        return F32(np.sum(a, dtype=np.float64)) if sums == "float64" else numpy1_sum(np.ascontiguousarray(a).ravel())

    def mean(a):
        return F32(float(total(a)) / a.size)

    out: dict[int, object] = {}
    with np.errstate(all="ignore"):
        nx, ny = np.sqrt(total(X * X)), np.sqrt(total(Y * Y))
        if scalar:
            out[0] = 1.0
        elif nx <= EPS and ny < EPS:
            out[0] = "1.0"  # the original returns this text as it is, not formatted
        elif nx ** 0.5 <= EPS or ny ** 0.5 <= EPS:
            out[0] = None
        else:
            out[0] = float(min(total((X / nx) * (Y / ny)), 1.0))
        absd = np.abs(X - Y)
        out[1] = float(absd.max())
        rel = np.where(np.abs(Y) > EPS, np.abs(X / Y - F32(1)), F32(0))
        out[2] = float(total(rel))
        s = total(Y ** 2)
        out[3] = 0.0 if s ** 0.5 <= EPS else float(F32(total(absd * absd) / s)) ** 0.5

        def normalised(d):
            hi, lo = d.max(), d.min()
            span = hi - lo
            return np.maximum((d - lo) / span if span != 0 else d, F32_EPS)

        p, q = normalised(X), normalised(Y)
        P, Q = p / total(p), q / total(q)
        kld = float(total(P * np.log(P / Q)))
        out[4] = 0.0 if abs(kld) < EPS else kld
        out[5] = (float(np.mean(X, dtype=np.float64)), float(np.std(X, dtype=np.float64)),
                  float(np.mean(Y, dtype=np.float64)), float(np.std(Y, dtype=np.float64)))
        out[6] = float(mean(absd))
        out[7] = float(np.sqrt(mean(absd * absd)))
        out[8] = float(rel.max())
        out[9] = float(mean(rel))
    return out


def printed(index, value):
    """The original's text: Python's "{:.6f}" (nan, inf), `NaN` for not computed, the std 4-tuple with 3 decimals."""
    if value is None:
        return "NaN"
    if isinstance(value, str):
        return value
    if index == 5:
        return "(%s;%s),(%s;%s)" % tuple("%.3f" % (0.0 if abs(v) < 0.001 else v) for v in value)
    return "%.6f" % value


def _step(v):
    """One float32 step at v: how far two float32 roundings of nearly the same sum may land apart."""
    return float(np.spacing(np.abs(F32(v)))) if math.isfinite(v) else 0.0


def check(x, y, result, *, scalar=False, sums="float32"):
    """Printed text equal to the reference's; where a last digit differs, the values are one float32 step (or,
    for the cosine and KLD, whose terms the kernel regroups, 1e-7) apart. Returns how many texts differed."""
    ref = original32(x, y, scalar=scalar, sums=sums)
    slack = 1 if sums == "float32" else 64  # float64 sums: a few float32 steps per level of NumPy's tree
    differing = 0
    for i in ALL:
        want = printed(i, ref[i])
        got = result.format(i)
        if i == 5:
            np.testing.assert_allclose(result.standard_deviation, ref[5], rtol=1e-9, atol=1e-12, equal_nan=True)
            assert got == want, (got, want)
            continue
        if got == want or {got, want} == {"0.000000", "-0.000000"}:
            continue
        differing += 1
        value, expected = result.value(i), ref[i]
        assert expected is not None and math.isfinite(expected), (i, got, want)
        tolerance = slack * _step(expected) + (1e-7 if i in (0, 4) else 0.0)
        assert abs(value - expected) <= tolerance, (i, got, want, value, expected)
        assert abs(float(got) - float(want)) <= max(1e-6, tolerance) * 1.01, (i, got, want)
    return differing


def _as(dtype, values):
    if dtype == "bf16":
        return values.astype(ml_dtypes.bfloat16)
    if dtype == "bool":
        return values > 0
    if dtype in ("int8", "int32"):
        scale = 40 if dtype == "int8" else 100_000
        return np.clip(np.round(values * scale), -127 if dtype == "int8" else -(2 ** 31), 127 if dtype == "int8"
                       else 2 ** 31 - 1).astype(dtype)
    return values.astype(dtype)


PAIRS = [("float32", "float32"), ("float16", "float32"), ("bf16", "float32"), ("float32", "float16"),
         ("int8", "float32"), ("int32", "int32"), ("int8", "int8"), ("bool", "float32"), ("float16", "bf16")]


@pytest.mark.parametrize("n", [1, 7, 16, 17, 1000, 4097, 70_001])
@pytest.mark.parametrize("x_dtype,y_dtype", PAIRS)
def test_random_data_prints_as_the_original(n, x_dtype, y_dtype):
    rng = np.random.default_rng(n)
    y = (rng.standard_normal(n) * 2).astype(np.float32)
    x = (y + rng.standard_normal(n).astype(np.float32) * 0.05).astype(np.float32)
    a, b = _as(x_dtype, x), _as(y_dtype, y)
    assert check(a, b, compare_arrays(a, b)) <= 1


@pytest.mark.parametrize("n", [20_000, 100_003])
def test_relative_differences_near_1e6_move_the_printed_digits(n):
    # fp32 data whose relative differences are near 1e-6: |float32(x / y) - 1| is biased against |x - y| / |y|,
    # the printed AccumulatedRelativeError follows the original, and --precise gives the exact terms' value
    rng = np.random.default_rng(7)
    y = rng.uniform(0.5, 2.0, n).astype(np.float32) * rng.choice([-1, 1], n).astype(np.float32)
    x = (y * (1 + rng.standard_normal(n) * 1e-6)).astype(np.float32)
    r = compare_arrays(x, y)
    assert check(x, y, r) == 0
    precise = compare_arrays(x, y, precise=True)
    assert not r.precise and precise.precise
    assert r.format(2) != precise.format(2)
    X, Y = x.astype(np.float64), y.astype(np.float64)
    assert precise.value(2) == pytest.approx(float(np.sum(np.abs(X - Y) / np.abs(Y))), rel=1e-9)


def test_float32_sums_of_the_original_agree_within_a_few_steps():
    rng = np.random.default_rng(8)
    y = rng.standard_normal(200_000).astype(np.float32)
    x = (y + rng.standard_normal(y.size).astype(np.float32) * 1e-3).astype(np.float32)
    check(x, y, compare_arrays(x, y), sums="float32")


@pytest.mark.parametrize("side", ["x", "y", "both"])
def test_all_zero_sides(side):
    rng = np.random.default_rng(9)
    v = rng.standard_normal(999).astype(np.float32)
    z = np.zeros(999, np.float32)
    x, y = (z, v) if side == "x" else (v, z) if side == "y" else (z, z)
    r = compare_arrays(x, y)
    assert check(x, y, r) == 0
    # KLD is a number: the clamp leaves no zero; two zero sides are uniform P and Q
    assert r.format(4) != "NaN" and math.isfinite(r.value(4))
    if side == "both":
        assert r.format(4) == "0.000000" and r.format(0) == "1.0"
    elif side == "x":
        assert r.value(4) > 0
    if side != "both":
        assert r.format(0) == "NaN"  # not computed: the row's reason says which side is zero


@pytest.mark.parametrize("where,bad", [("x", np.nan), ("x", np.inf), ("x", -np.inf), ("y", np.nan), ("y", np.inf),
                                       ("both", np.nan)])
@pytest.mark.parametrize("n", [5, 40, 5000])
def test_nan_and_inf_print_as_numpy_gives_them(where, bad, n):
    rng = np.random.default_rng(n)
    y = rng.standard_normal(n).astype(np.float32)
    x = (y + np.float32(0.01)).astype(np.float32)
    if where in ("x", "both"):
        x[n // 3] = bad
    if where in ("y", "both"):
        y[n // 2] = bad
    r = compare_arrays(x, y)
    ref = original32(x, y)
    assert r.formatted() == [printed(i, ref[i]) for i in ALL]
    assert "NaN" not in r.formatted()  # every metric was computed: lowercase nan, never the marker
    if where == "x" and bad != bad:
        assert r.formatted()[:5] == ["nan"] * 5 and r.format(5).startswith("(nan;nan),(")


def test_scalars():
    for a, b in ((3.0, -2.0), (0.0, 0.0), (1.5, 1.5)):
        x, y = np.array(a, np.float32), np.array(b, np.float32)
        r = compare_arrays(x, y)
        assert check(x, y, r, scalar=True) == 0
        assert r.format(0) == "1.000000"


def test_overflowing_float32_terms_follow_the_original():
    # x * x beyond float32's range: the original's norms are inf and x / inf gives a cosine of 0
    x = np.array([3e20, 1e20, -2e20], np.float32)
    y = np.array([1.0, 2.0, 3.0], np.float32)
    r = compare_arrays(x, y)
    ref = original32(x, y)
    assert r.format(0) == "0.000000"
    assert [r.format(i) for i in ALL if i != 5] == [printed(i, ref[i]) for i in ALL if i != 5]
    np.testing.assert_allclose(r.standard_deviation, ref[5], rtol=1e-12)  # float64, 21 digits printed


def test_thread_counts_and_levels_print_the_same():
    rng = np.random.default_rng(10)
    y = (rng.standard_normal(300_001) * 3).astype(np.float32)
    x = (y * (1 + rng.standard_normal(y.size).astype(np.float32) * 1e-5)).astype(np.float16)
    base = compare_arrays(x, y, threads=1, chunk_elements=4096)
    for threads in (2, 3):
        other = compare_arrays(x, y, threads=threads, chunk_elements=4096)
        assert [v.hex() for v in _numbers(other)] == [v.hex() for v in _numbers(base)]
    check(x, y, base)


def _numbers(r):
    return [float(v) for v in list(r.values())[:5] + list(r.values())[6:]] + [r.mean_x, r.std_x, r.mean_y, r.std_y]


# DUMPCMP_SIMD is read once per process: each level in a fresh interpreter, its printed results checked here.
_LEVEL_SCRIPT = r"""
import json, sys
import ml_dtypes
import numpy as np
from dumpcmp.comparison.metrics import compare_arrays
cases = json.loads(sys.argv[1])
out = []
rng = np.random.default_rng(12)
for n, kind in cases:
    y = (rng.standard_normal(n) * 2).astype(np.float32)
    x = (y * (1 + rng.standard_normal(n) * 1e-6)).astype(np.float32) if kind == "close" else \
        (y + rng.standard_normal(n).astype(np.float32) * 0.05).astype(np.float16)
    if kind == "zero":
        x = np.zeros(n, np.float32)
    out.append(list(compare_arrays(x, y, threads=2, chunk_elements=5000).formatted()))
print(json.dumps(out))
"""
_LEVEL_CASES = [[9, "close"], [4097, "close"], [70_001, "close"], [4111, "fp16"], [33, "zero"], [12_345, "zero"]]


def _level_inputs():
    rng = np.random.default_rng(12)
    for n, kind in _LEVEL_CASES:
        y = (rng.standard_normal(n) * 2).astype(np.float32)
        x = (y * (1 + rng.standard_normal(n) * 1e-6)).astype(np.float32) if kind == "close" else \
            (y + rng.standard_normal(n).astype(np.float32) * 0.05).astype(np.float16)
        if kind == "zero":
            x = np.zeros(n, np.float32)
        yield x, y


@pytest.mark.parametrize("level", ["scalar", "avx2", "avx512"])
def test_every_simd_level_prints_as_the_original(level):
    env = dict(os.environ, DUMPCMP_SIMD=level)
    done = subprocess.run([sys.executable, "-c", _LEVEL_SCRIPT, json.dumps(_LEVEL_CASES)], env=env,
                          capture_output=True, text=True, check=True)
    texts = json.loads(done.stdout)
    for (x, y), got in zip(_level_inputs(), texts):
        here = compare_arrays(x, y, threads=2, chunk_elements=5000)
        assert got == list(here.formatted())  # the levels give the same bits (test_metrics.py checks them all)
        check(x, y, here)


def test_small_divergence_follows_the_original_float32_normalising_sums():
    # P = p / float32(sum p) and Q likewise sum to 1 only within a float32 step: a shift of up to ~1e-7 that
    # shows in the printed digits of a divergence near 1e-6, and is mirrored
    rng = np.random.default_rng(13)
    y = rng.standard_normal(1 << 20).astype(np.float32)
    x = (y + rng.standard_normal(y.size).astype(np.float32) * 0.01).astype(np.float16)
    r = compare_arrays(x, y)
    ref = original32(x, y)
    assert abs(r.value(4) - ref[4]) < 2e-9 and r.format(4) == printed(4, ref[4])


def _numpy_log_is_its_simd_kernel():
    """np.log of float32 on this host is NumPy's AVX2+FMA3 / AVX-512F kernel (numpy_logf.hpp), seen on an argument
    where that kernel is an ulp above the correctly rounded log."""
    x = np.array([0x41F9852D], np.uint32).view(np.float32)
    return int(np.log(x).view(np.uint32)[0]) == 0x405C2A93


@pytest.mark.skipif(not _numpy_log_is_its_simd_kernel(), reason="this host's np.log is not NumPy's SIMD kernel")
@pytest.mark.parametrize("n", [1, 17, 8192, 3 * 8192 + 5, 100_003])
@pytest.mark.parametrize("x_dtype", [np.float32, np.float16])
@pytest.mark.parametrize("spread", [1e-3, 0.3])
def test_kld_is_the_originals_float32_bits(n, x_dtype, spread):
    # the log of P * log(P / Q) is np.log's own (not the correctly rounded one, an ulp away from it for some
    # arguments): the KLD is the original's float32 value, not just its printed digits
    rng = np.random.default_rng(n)
    y = rng.standard_normal(n).astype(np.float32)
    x = (y + rng.standard_normal(n).astype(np.float32) * spread).astype(x_dtype)
    want = original32(x, y)[4]
    for threads in (1, 2):
        got = compare_arrays(x, y, threads=threads, chunk_elements=8192).value(4)
        assert np.float32(got).tobytes() == np.float32(want).tobytes(), (got, want)
