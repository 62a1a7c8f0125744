"""The core's one-pass tensor statistics (compare.stats_many) against NumPy: every data type the core reads (from
random storage bytes, NaN and infinities included), every device layout decoded as the comparison decodes it
(padding never counted), .npy ground truth, and the same bits whatever the thread count."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dumpcmp import _core as core
from dumpcmp.dumps.dump import TensorData, open_dump, write_dump
from dumpcmp.dumps.ground_truth import mapped_npy
from helpers import layout_reference as R
from helpers.statsfile import numpy_stats

TYPES = [t for t in core.dtype.data_types() if t["repr"] != "none" and not t["numpy"].startswith("<c")]
COMPLEX = {t["name"]: t["bits"] for t in core.dtype.data_types() if t["numpy"].startswith("<c")}


def same(got: dict, want: dict) -> None:
    for k in ("count", "nan_count", "pos_inf_count", "neg_inf_count", "zero_count"):
        assert got[k] == want[k], k
    for k in ("max", "min"):
        assert (math.isnan(got[k]) and math.isnan(want[k])) or got[k] == want[k], k
    for k in ("mean", "l2norm"):
        # float64 sums of the same float32 values; only the order of the additions differs from NumPy's
        assert (math.isnan(got[k]) and math.isnan(want[k])) or got[k] == pytest.approx(want[k], rel=1e-12,
                                                                                       abs=1e-300), k


def raw_source(tmp_path, name, raw: bytes, count: int):
    """A dump file holding `raw` as the storage of `count` elements of data type `name`, as the compare reads it."""
    path = tmp_path / f"Op.op_{name}.1.1700000000000000"
    write_dump(path, op_name="op", outputs=[TensorData(np.frombuffer(raw, np.uint8), data_type=name, shape=(count,),
                                                       raw=True)])
    return core.compare.source_from_dump(open_dump(path)._file, "output", 0)


@pytest.mark.parametrize("info", TYPES, ids=lambda t: t["name"])
def test_every_data_type_from_random_storage(tmp_path, rng, info):
    count = 5000
    nbytes = (count * info["bits"] + 7) // 8
    raw = rng.integers(0, 256, nbytes, dtype=np.uint8)
    if info["name"] == "BOOL":
        raw = raw % 2
    elif info["name"] == "FLOAT":
        values = raw.view(np.float32).copy()
        values[:4] = [np.nan, np.inf, -np.inf, -0.0]
        raw = values.view(np.uint8)
    decoded = core.dtype.decode(info["name"], raw, count)
    (got,) = core.compare.stats_many([raw_source(tmp_path, info["name"], raw.tobytes(), count)])
    same(got, numpy_stats(decoded))


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_types_read_by_their_real_part(tmp_path, rng, name):
    # the comparison's reading (the core's float32 decoding) takes the real part; the statistics read the same
    count = 300
    raw = rng.integers(0, 256, count * COMPLEX[name] // 8, dtype=np.uint8)
    with np.errstate(all="ignore"):
        real = core.dtype.decode(name, raw, count).real.astype(np.float32)
    (got,) = core.compare.stats_many([raw_source(tmp_path, name, raw.tobytes(), count)])
    same(got, numpy_stats(real))


def test_finite_float32_with_specials(rng):
    x = rng.standard_normal(100_000).astype(np.float32)
    no_nan = x.copy()
    no_nan[[5, 70_000]] = [np.inf, 0.0]
    with_nan = no_nan.copy()
    with_nan[99_999] = np.nan
    both_inf = x.copy()
    both_inf[[1, 2]] = [np.inf, -np.inf]
    got = core.compare.stats_many([core.compare.source_from_array(a) for a in (x, no_nan, with_nan, both_inf)])
    for g, a in zip(got, (x, no_nan, with_nan, both_inf)):
        same(g, numpy_stats(a))
    assert got[1]["max"] == math.inf and got[1]["l2norm"] == math.inf and got[1]["zero_count"] == 1
    assert math.isnan(got[2]["max"]) and got[2]["nan_count"] == 1
    assert math.isnan(got[3]["mean"]) and got[3]["max"] == math.inf and got[3]["min"] == -math.inf


def test_empty_tensor():
    (got,) = core.compare.stats_many([core.compare.source_from_array(np.zeros(0, np.float32))])
    assert got["count"] == 0 and got["l2norm"] == 0.0 and math.isnan(got["max"]) and math.isnan(got["mean"])


LAYOUTS = [
    ("NC1HWC0", "NCHW", (2, 20, 3, 5), lambda x: R.loops_nc1hwc0(x, 16)),
    ("NDC1HWC0", "NCDHW", (1, 19, 2, 3, 4), lambda x: R.loops_ndc1hwc0(x, 16)),
    ("FRACTAL_Z", "NCHW", (18, 20, 3, 3), lambda x: R.loops_fractal_z(x, 16)),
    ("FRACTAL_Z_3D", "NCDHW", (17, 5, 2, 3, 3), lambda x: R.loops_fractal_z_3d(x, 16)),
    ("FRACTAL_NZ", "ND", (3, 33, 40), lambda x: R.loops_fractal_nz(x, 16)),
    ("FRACTAL_NZ", "ND", (70,), lambda x: R.loops_fractal_nz(x, 16)),
]


@pytest.mark.parametrize("fmt,plain,shape,encode", LAYOUTS, ids=[f"{f}-{len(s)}d" for f, _, s, _ in LAYOUTS])
def test_device_layouts_decoded_padding_not_counted(tmp_path, rng, fmt, plain, shape, encode):
    # nonzero values but for a few: the zeros of the padding would show in the zero count and the mean
    x = (rng.standard_normal(shape) + 3).astype(np.float16)
    x.flat[::7] = 0
    device = encode(x)
    assert device.size > x.size
    path = tmp_path / f"Op.op.1.{1700000000000000}"
    write_dump(path, op_name="op", outputs=[TensorData(device, format=fmt, original_shape=shape)])
    src = core.compare.source_from_dump(open_dump(path)._file, "output", 0, dst_format=plain, dst_shape=list(shape))
    (got,) = core.compare.stats_many([src])
    same(got, numpy_stats(x))


def test_npy_ground_truth(tmp_path, rng):
    x = rng.standard_normal((4, 3, 50)).astype(np.float32)
    path = tmp_path / "conv1.0.1700000000000000.npy"
    np.save(path, x)
    source, shape, _ = mapped_npy(str(path))
    (got,) = core.compare.stats_many([source])
    same(got, numpy_stats(x))


def test_same_bits_whatever_the_threads(rng):
    x = rng.standard_normal(700_001).astype(np.float32) * 1e3
    small = rng.standard_normal(1000).astype(np.float32)
    results = [core.compare.stats_many([core.compare.source_from_array(a) for a in (x, small, x)], threads=t)
               for t in (1, 2, 3)]
    assert results[0] == results[1] == results[2]
    assert results[0][0] == results[0][2]
    same(results[0][0], numpy_stats(x))
