"""The default metrics' float32 sums are NumPy's, bit for bit.

The original tool sums its float32 terms with `np.sum` under NumPy 1.x (its committed oracle outputs come from
NumPy 1.26): pairwise summation in float32 over blocks of 8192 elements (the ufunc buffer), the block sums added
in order in float32. NumPy 2 sums a contiguous array as one pairwise tree, so for up to 8192 elements both are
`np.sum(a)`, and beyond that NumPy 1.x's sum is `np.sum` of each block, folded in order: the reference here.
"""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp.comparison.metrics import compare_arrays

F32 = np.float32
BLOCK = 8192
EPS = 2.220446049250313e-16


def numpy1_sum(a: np.ndarray) -> np.float32:
    total = None
    for first in range(0, a.size, BLOCK):
        s = np.sum(a[first:first + BLOCK])
        total = s if total is None else F32(total + s)
    return F32(-0.0) if total is None else total


def _data(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(F32)


SIZES = [*range(1, 260), 1000, 4095, 8191, 8192, 8193, 16_391, 70_001, 300_007]


@pytest.mark.parametrize("n", SIZES)
def test_sum_is_numpys_bit_for_bit(n, testhooks):
    a = _data(n, n)
    got = F32(testhooks.numpy_sum_f32(a))
    assert got.tobytes() == numpy1_sum(a).tobytes()
    if n <= BLOCK:
        assert got.tobytes() == np.sum(a).tobytes()


@pytest.mark.parametrize("n", [5, 129, 8192, 8193, 40_000, 300_007])
@pytest.mark.parametrize("threads,chunk", [(1, 1 << 16), (2, 5000), (3, 1 << 13)])
@pytest.mark.parametrize("x_dtype", ["float32", "float16"])
def test_metric_sums_are_numpys(n, threads, chunk, x_dtype):
    rng = np.random.default_rng(n)
    y = (rng.standard_normal(n) * 2).astype(F32)
    y[:: 97] = 0.0  # |y| <= EPS: the relative term is 0
    x = (y * (1 + rng.standard_normal(n) * 1e-6)).astype(F32) + F32(1e-3)
    x = x.astype(x_dtype)
    r = compare_arrays(x, y, threads=threads, chunk_elements=chunk)
    X = x.astype(F32)
    with np.errstate(all="ignore"):
        rel = np.where(np.abs(y) > EPS, np.abs(X / y - F32(1)), F32(0))
    d = X - y
    assert r.value(2) == float(numpy1_sum(rel))  # AccumulatedRelativeError
    assert r.value(9) == float(F32(float(numpy1_sum(rel)) / n))  # MeanRelativeError
    assert r.value(6) == float(F32(float(numpy1_sum(np.abs(d))) / n))  # MeanAbsoluteError
    assert r.value(7) == float(np.sqrt(F32(float(numpy1_sum(d * d)) / n)))  # RootMeanSquareError
    assert r.value(3) == float(F32(numpy1_sum(d * d) / numpy1_sum(y * y))) ** 0.5  # RelativeEuclideanDistance
    nx, ny = np.sqrt(numpy1_sum(X * X)), np.sqrt(numpy1_sum(y * y))
    assert r.value(0) == min(float(numpy1_sum((X / nx) * (y / ny))), 1.0)  # CosineSimilarity


def test_divergence_just_below_zero_prints_as_the_original():
    # near-identical tensors: the original's float32 sum of P log(P/Q) lands just below zero and prints -0.000000
    rng = np.random.default_rng(0)
    y = rng.standard_normal(20_000).astype(F32)
    x = (y * (1 + rng.standard_normal(y.size) * 1e-7)).astype(F32)
    r = compare_arrays(x, y)
    assert -1e-6 < r.value(4) < 0 and r.format(4) == "-0.000000"
    assert compare_arrays(x, y, precise=True).format(4) == "0.000000"  # --precise: float64 terms, clamped at 0
